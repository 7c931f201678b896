"""The method docs work as written: docs/architecture.md's example method loads from a file with
its own flag and computes its advantages; docs/plugins.md shows the real Method protocol next to
the four hooks."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from slime.methods import Method, load_method_class
from slime.config.run_args import parse_run_args
from slime.record.sample import Sample

REPO = Path(__file__).resolve().parent.parent


def _blocks(doc: str) -> list[str]:
    return [textwrap.dedent(b) for b in re.findall(r"```python\n(.*?)```", (REPO / doc).read_text(), flags=re.S)]


def test_the_architecture_example_method_runs(tmp_path):
    code = next(b for b in _blocks("docs/architecture.md") if "class MyMethod(Method)" in b)
    path = tmp_path / "method.py"
    path.write_text(code)
    spec = f"{path}:MyMethod"
    cls = load_method_class(spec)
    cfg = parse_run_args(["--advantage-estimator", spec, "--my-beta", "0.5"])
    method = cls(cfg)
    assert method.flags.my_beta == 0.5

    def step(rewards):
        samples = [Sample(tokens=[1, 2, 3], response_length=2, rollout_log_probs=[-1.0, -1.0], reward=r)
                   for r in rewards]
        return method.compute_advantages(samples)

    _, m1 = step([1.0, -1.0, 1.0, 1.0])
    samples, m2 = step([1.0, 1.0])
    assert m1["my/baseline"] == 0.0 and m2["my/baseline"] == pytest.approx(0.25)  # 0.5 * 0 + 0.5 * 0.5
    assert samples[0].advantages == pytest.approx([0.75, 0.75])


def test_plugins_md_shows_the_method_protocol_next_to_the_hooks():
    text = (REPO / "docs" / "plugins.md").read_text()
    for flag in ("--advantage-estimator", "--custom-loss-function-path", "--custom-rm-path",
                 "--rollout-function-path", "--custom-generate-function-path"):
        assert f"| `{flag}` |" in text
    protocol = next(b for b in _blocks("docs/plugins.md") if b.startswith("class Method("))
    shown = set(re.findall(r"def (\w+)\(", protocol))
    public = {n for n, v in vars(Method).items() if callable(v) or isinstance(v, classmethod)} - {"__init__"}
    assert shown - {"__init__"} == {n for n in public if not n.startswith("_") and n != "prepares_samples"}
    assert (REPO / "docs" / "architecture.md").is_file()
