"""The seam between the trainer core and the methods: ``slime/`` imports no runtime, every flag is
declared once (default, help, env fallback) and means what it says, methods load by name or file."""

from __future__ import annotations

import ast
import importlib
import io
import json
import os
import subprocess
import sys
import textwrap
import tokenize
from pathlib import Path

import pytest

from slime.config.arguments import ConfigError
from slime.config.run_args import parse_run_args, run_sections

REPO = Path(__file__).resolve().parents[2]
SLIME = REPO / "slime"


def _imported_modules(tree: ast.AST) -> list[str]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.append(node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            out.append(str(node.args[0].value))
    return out


def test_slime_imports_no_runtime_package():
    files = sorted(SLIME.rglob("*.py"))
    assert len(files) > 20
    for path in files:
        source = path.read_text()
        mods = _imported_modules(ast.parse(source, filename=str(path)))
        assert not [m for m in mods if m.split(".")[0] == "openclaw_rl"], f"{path} imports openclaw_rl"
        # and the name appears nowhere but in comments (no strings naming a runtime module either)
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if "openclaw_rl" in tok.string:
                assert tok.type == tokenize.COMMENT, f"{path}:{tok.start[0]} names openclaw_rl outside a comment"


def test_the_ast_check_catches_an_import():
    tree = ast.parse("import os\nfrom openclaw_rl.models import load_model\nimportlib.import_module('openclaw_rl.x')\n")
    assert [m for m in _imported_modules(tree) if m.startswith("openclaw_rl")] == ["openclaw_rl.models", "openclaw_rl.x"]


@pytest.mark.parametrize("method", ["grpo", "broadcast", "opd", "combine", "passthrough"])
def test_every_flag_in_help_has_help_text(method):
    from slime.config.arguments import build_parser

    parser = build_parser(run_sections(method, None))
    options = [a for a in parser._actions if a.option_strings and a.dest != "help"]
    assert len(options) > 70
    assert [a.option_strings[0] for a in options if not (a.help or "").strip()] == []
    names = {o for a in options for o in a.option_strings}
    assert {"--lr", "--kl-loss-coef", "--seed", "--prm-model-path", "--distill-topk", "--combine-w-opd"} <= names


def test_help_lists_every_group_and_env_fallback():
    r = subprocess.run([sys.executable, str(SLIME / "train.py"), "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = " ".join(r.stdout.split())  # argparse wraps help lines
    for text in ("method opd", "method combine", "rollout service", "env MAJORITY_VOTE_N", "env PRM_MODEL_PATH",
                 "env OPENCLAW_COMBINE_W_OPD", "(default: 64)", "--advantage-estimator NAME|FILE.py:Class"):
        assert text in out, text


def test_explicit_flag_beats_env_and_env_beats_default():
    env = {"PRM_MODEL_PATH": "/from/env", "MAJORITY_VOTE_N": "3", "OPENCLAW_PORT": "31000"}
    cfg = parse_run_args(["--prm-model-path", "/from/flag", "--majority-vote-n", "5"], environ=env)
    assert (cfg.prm_model_path, cfg.majority_vote_n, cfg.port) == ("/from/flag", 5, 31000)
    assert {"prm_model_path", "majority_vote_n"} <= cfg.explicit and "port" not in cfg.explicit
    cfg = parse_run_args([], environ={})
    assert (cfg.prm_model_path, cfg.majority_vote_n, cfg.port, cfg.majority_vote_threshold) == (None, 1, 30000, 0.5)


@pytest.mark.parametrize("env, message", [
    ({"OPENCLAW_PORT": "thirty"}, "OPENCLAW_PORT must be an integer, got 'thirty' (the fallback of --port)"),
    ({"MAJORITY_VOTE_THRESHOLD": "1.5"}, "MAJORITY_VOTE_THRESHOLD must be <= 1, got 1.5"),
    ({"MAJORITY_VOTE_N": "0"}, "MAJORITY_VOTE_N must be >= 1, got 0"),
])
def test_a_bad_env_value_is_one_line(env, message):
    with pytest.raises(ConfigError) as info:
        parse_run_args([], environ=env)
    assert str(info.value) == message


def test_the_prm_flag_beats_prm_model_path_in_the_judge(monkeypatch):
    from openclaw_rl.rollout.turn_judges import build_prm

    monkeypatch.setenv("PRM_MODEL_PATH", "builtin:smollm2-135m")
    cfg = parse_run_args(["--model-path", "builtin:tiny-qwen3", "--prm-model-path", "builtin:tiny-qwen3",
                          "--prm-mode", "logprob"])  # a mode that loads the judge model
    assert build_prm(cfg).backend.model_path == "builtin:tiny-qwen3"


def test_another_methods_flag_names_the_method_it_needs():
    for argv, message in ((["--distill-topk", "4"], "--distill-topk needs --advantage-estimator opd"),
                          (["--opd-teacher", "live"],
                           "--opd-teacher needs --advantage-estimator combine or --advantage-estimator opd"),
                          (["--advantage-estimator", "combine", "--distill-topk", "2"],
                           "--distill-topk needs --advantage-estimator opd")):
        with pytest.raises(ConfigError) as info:
            parse_run_args(argv)
        assert str(info.value) == message
    assert parse_run_args(["--advantage-estimator", "combine", "--opd-teacher", "live"]).opd_teacher == "live"


def test_loss_type_is_honoured():
    assert parse_run_args(["--custom-loss-function-path", "x.py"]).loss_type == "custom_loss"
    assert parse_run_args([]).loss_type == "policy_loss"
    with pytest.raises(ConfigError, match="--loss-type policy_loss contradicts --custom-loss-function-path"):
        parse_run_args(["--loss-type", "policy_loss", "--custom-loss-function-path", "x.py"])
    with pytest.raises(ConfigError, match="needs --custom-loss-function-path"):
        parse_run_args(["--loss-type", "custom_loss"])


def test_method_classes_by_name_and_by_file(tmp_path):
    from openclaw_rl.methods.binary_rl import BinaryRL
    from openclaw_rl.methods.opd import OPD
    from slime.methods import GRPOMethod, PassThroughMethod, load_method_class, method_names
    from slime.plugins.loader import PluginError

    assert {"grpo", "broadcast", "opd", "combine", "passthrough"} <= set(method_names())
    assert load_method_class("broadcast") is BinaryRL and load_method_class("opd") is OPD
    assert load_method_class("grpo") is GRPOMethod and load_method_class("passthrough") is PassThroughMethod
    (tmp_path / "m.py").write_text(textwrap.dedent("""
        from slime.methods import Method

        class Half(Method):
            def compute_advantages(self, samples):
                return samples, {}

        class NotAMethod:
            pass

        class Abstract(Method):
            pass
    """))
    assert load_method_class(f"{tmp_path}/m.py:Half").__name__ == "Half"
    assert load_method_class(f"{tmp_path}/m.py").__name__ == "Half"  # the one concrete Method subclass
    for name, message in (("NotAMethod", "is not a subclass of slime.methods.Method"),
                          ("Abstract", "does not implement compute_advantages"), ("Nope", "no class 'Nope'")):
        with pytest.raises(PluginError, match=message):
            load_method_class(f"{tmp_path}/m.py:{name}")
    with pytest.raises(ConfigError, match="invalid choice: 'magic'"):
        load_method_class("magic")


@pytest.mark.parametrize("method", [None, "grpo", "broadcast", "opd"])
def test_groups_on_live_single_turn_traffic_are_refused(method):
    """The seed's ROLLOUT_ARGS="--rollout-batch-size 64 --num-rollouts-per-prompt 4" on live traffic: one
    line saying why, whatever the method (a live turn has one response)."""
    from slime.train import check_run

    argv = ["--num-rollout", "1", "--rollout-batch-size", "64", "--num-rollouts-per-prompt", "4"]
    with pytest.raises(ConfigError, match="^--n-samples-per-prompt 4: a live turn has one response") as info:
        check_run(parse_run_args(argv + (["--advantage-estimator", method] if method else [])))
    assert "\n" not in str(info.value)


def test_default_method_fits_the_rollout():
    """No --advantage-estimator: broadcast for single samples (live turns, the seed's plugin example),
    grpo for groups; grpo given for single samples keeps its clear message."""
    from slime.train import check_run

    assert parse_run_args(["--num-rollout", "1"]).advantage_estimator == "broadcast"
    assert parse_run_args(["--num-rollout", "1", "--n-samples-per-prompt", "4"]).advantage_estimator == "grpo"
    check_run(parse_run_args(["--num-rollout", "1"]))
    with pytest.raises(ConfigError, match="needs --n-samples-per-prompt >= 2"):
        check_run(parse_run_args(["--num-rollout", "1", "--advantage-estimator", "grpo"]))


def test_server_side_flags_without_a_server_are_a_one_line_warning(tmp_path, caplog):
    from slime.train import check_run

    data = tmp_path / "s.jsonl"
    data.write_text('{"session_id": "a", "turns": [{"prompt": "hi", "response": "hello"}]}\n')
    cfg = parse_run_args(["--num-rollout", "1", "--advantage-estimator", "broadcast", "--data-path", str(data),
                          "--port", "31234", "--served-model-name", "x"])
    with caplog.at_level("WARNING"):
        check_run(cfg)
    lines = [r.getMessage() for r in caplog.records if "ignored" in r.getMessage()]
    assert lines == ["--port, --served-model-name are ignored: with --data-path (offline) the job starts no "
                     "intercept server"]
    caplog.clear()
    with caplog.at_level("WARNING"):
        check_run(parse_run_args(["--num-rollout", "1", "--advantage-estimator", "broadcast", "--data-path", str(data)]))
    assert not [r for r in caplog.records if "ignored" in r.getMessage()]


def _metadata_reads(tree: ast.AST) -> list[int]:
    """Lines that read ``<x>.metadata`` (a key, ``.get``, ``in``, a copy): everything but writing a
    key (``x.metadata[k] = v``, ``del``), replacing it (``x.metadata = {...}``) or ``.update(...)``."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr == "metadata" and isinstance(node.ctx, ast.Load)):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Subscript) and parent.value is node and not isinstance(parent.ctx, ast.Load):
            continue
        if isinstance(parent, ast.Attribute) and parent.attr == "update" and isinstance(parents.get(parent), ast.Call):
            continue
        out.append(node.lineno)
    return sorted(out)


#: the record itself (validating and serialising its own field) and the flag declarations, whose
#: ``metadata`` is the dataclass field's (help text, aliases), not a sample's
_METADATA_OWNERS = {"record/sample.py", "config/flags.py"}


def test_slime_reads_no_sample_metadata_key():
    """The trainer core reads a sample's typed fields (``Sample.trajectory`` for agent episodes);
    ``metadata`` is the plugins' (``slime/record/sample.py``)."""
    found = {}
    for path in sorted(SLIME.rglob("*.py")):
        if path.relative_to(SLIME).as_posix() in _METADATA_OWNERS:
            continue
        lines = _metadata_reads(ast.parse(path.read_text(), filename=str(path)))
        if lines:
            found[str(path.relative_to(REPO))] = lines
    assert found == {}, f"slime/ reads sample metadata at {found}"


def test_the_metadata_check_catches_a_read():
    tree = ast.parse("s.metadata['a'] = 1\nx = s.metadata.get('b')\nif 'c' in s.metadata: pass\n"
                     "s.metadata.update(d=1)\ns.metadata = {}\nmd = s.metadata\n")
    assert _metadata_reads(tree) == [2, 3, 6]


def test_slime_has_no_import_circle_and_no_import_in_a_function_body():
    """Every ``slime`` module imports the ``slime`` modules it needs at its top, and those imports
    form no circle (the configuration modules were one: arguments -> config_checks -> arguments)."""
    mods = {}
    for path in SLIME.rglob("*.py"):
        name = ".".join(path.relative_to(REPO).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = path
    top: dict[str, set] = {n: set() for n in mods}
    inner = []
    for name, path in mods.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        # what only type checkers read (``if TYPE_CHECKING:`` at the top) is neither run nor a circle
        typing_only = {sub for node in tree.body if isinstance(node, ast.If) and isinstance(node.test, ast.Name)
                       and node.test.id == "TYPE_CHECKING" for sub in ast.walk(node)}
        for node in ast.walk(tree):
            if node in typing_only:
                continue
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "slime":
                targets = {t for t in [node.module, *(f"{node.module}.{a.name}" for a in node.names)] if t in mods}
                if node in tree.body:
                    top[name] |= targets
                else:
                    inner.append(f"{name}:{node.lineno}")
    assert inner == [], f"imports of slime modules inside a function body: {inner}"
    state: dict[str, int] = {}

    def visit(name, path):
        state[name] = 1
        for dep in sorted(top[name]):
            assert state.get(dep) != 1, f"import circle: {' -> '.join(path + [dep])}"
            if dep not in state:
                visit(dep, path + [dep])
        state[name] = 2

    for name in sorted(mods):
        if name not in state:
            visit(name, [name])


@pytest.mark.parametrize("old, new", [("slime.sample", "slime.record.sample"), ("slime.flags", "slime.config.flags"),
                                      ("slime.advantages", "slime.algorithms.advantages"),
                                      ("slime.losses", "slime.algorithms.losses"), ("slime.hooks", "slime.plugins.hooks"),
                                      ("slime.models", "slime.trainer.models")])
def test_the_import_paths_plugins_used_before_the_split_give_the_same_objects(old, new):
    """A plugin written against ``from slime.sample import Sample`` (docs before the subpackages)
    gets the very classes the core uses, so ``isinstance`` checks and signatures still hold."""
    before, after = importlib.import_module(old), importlib.import_module(new)
    assert before.__all__ == after.__all__ and len(after.__all__) >= 3
    for name in after.__all__:
        assert getattr(before, name) is getattr(after, name), name


def test_importing_slime_or_its_config_does_not_import_torch():
    """A pool server or a launch helper reads ``slime.config.flags``; the package's public names load
    on first use (PEP 562), so such a process does not pay for torch. ``slime.Sample`` still works."""
    code = ("import sys, slime, slime.config.flags, slime.errors; assert 'torch' not in sys.modules, 'torch'; "
            "from slime import Sample, policy_loss; assert slime.Sample is Sample and 'torch' in sys.modules; "
            "assert sorted(slime.__all__) == slime.__all__ and set(slime.__all__) <= set(dir(slime))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_reading_every_registered_methods_flags_does_not_import_torch():
    """Each launch script runs ``python -m slime.config.run_args --runtime-env`` before it submits
    the job; that reads the flags of every registered method and of the rollout service, so none
    of their modules may import torch at its top (``slime.methods.base``, "Imports"): it cost each
    launch about 2 s. The module itself must still print the runtime_env."""
    code = ("import sys; from slime.config.run_args import job_runtime_env, run_sections; "
            "from slime.methods.registry import method_names; names = method_names(); "
            "assert {'broadcast', 'combine', 'grpo', 'opd'} <= set(names), names; "
            "[run_sections(m, None) for m in names]; job_runtime_env(); "
            "loaded = sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')); "
            "assert not loaded, loaded[:5]")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "slime.config.run_args", "--runtime-env"], capture_output=True,
                       text=True, timeout=120, cwd=REPO, env={**os.environ, "PRM_MODEL_PATH": "/prm"})
    assert r.returncode == 0 and json.loads(r.stdout)["env_vars"]["PRM_MODEL_PATH"] == "/prm", r.stderr


def test_the_driver_checks_and_logs_a_run_without_torch(tmp_path):
    """The driver (``slime/train.py``, a Ray job's entrypoint) only orchestrates: importing it,
    checking a run (offline with a reward plugin, live with the default judge) and its metrics sinks,
    TensorBoard included, load no torch. Loading it cost every job ~3 s of a core (the import, and
    the interpreter's exit). The train actors load the training stack by ``--train-backend``
    (:mod:`slime.trainer.registry`); a run with a loss plugin still has it probed before Ray starts,
    by the backend (torch then loads)."""
    data = tmp_path / "sessions.jsonl"
    data.write_text("")
    code = textwrap.dedent(f"""
        import sys
        from slime.config.run_args import parse_run_args
        from slime.orchestration.monitor import MetricsLogger
        from slime.train import check_run
        common = ["--model-path", "builtin:tiny-qwen3", "--rl-buffer-dir", {str(tmp_path / "buf")!r}]
        offline = check_run(parse_run_args([*common, "--data-path", {str(data)!r},
                                            "--custom-rm-path", "tests/plugins/low_ids_reward.py"]))
        live = check_run(parse_run_args([*common, "--num-rollout", "2"]))
        logger = MetricsLogger({str(tmp_path / "logs")!r}, "run-x")
        logger.log(1, {{"reward/mean": 0.5, "loss": 0.1}})
        logger.close()
        loaded = sorted(m for m in sys.modules if m == "torch" or m.startswith("torch."))
        assert not loaded, loaded[:5]
        assert any(line.startswith("reward: ") for line in offline) and not any("loss" in l for l in offline + live)
        lines = check_run(parse_run_args([*common, "--num-rollout", "2", "--custom-loss-function-path",
                                          "examples/method-template/custom_loss.py"]))
        assert any(line.startswith("loss: ") for line in lines) and "torch" in sys.modules, lines
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert r.returncode == 0, r.stderr[-3000:]


def test_an_unregistered_train_backend_is_one_line():
    from slime.trainer.registry import load_train_backend, train_backend_names

    assert "fsdp" in train_backend_names()
    with pytest.raises(ConfigError, match=r"^argument --train-backend: 'megatron' is not a registered training "
                                          r"backend \(registered: fsdp; entry points slime.train_backends\)$"):
        load_train_backend("megatron")


def test_the_plugin_loaders_names_still_import_from_slime_plugins():
    """``slime.plugins`` was the loader module; it is now the package, and still gives its names."""
    from slime.plugins import PluginError, load_function
    from slime.plugins import loader

    assert PluginError is loader.PluginError and load_function is loader.load_function
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        importlib.import_module("slime.plugins").nope


def test_train_async_names_itself_in_usage_and_errors():
    """``python slime/train_async.py`` is ``slime/train.py --async-train``; its help and its one-line
    errors name the script that was run."""
    r = subprocess.run([sys.executable, str(SLIME / "train_async.py"), "--help"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("usage: slime/train_async.py"), r.stderr
    r = subprocess.run([sys.executable, str(SLIME / "train_async.py"), "--lr", "abc"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.strip().splitlines()[-1].startswith("slime/train_async.py: error: "), r.stderr
