"""Convert AgentBench OS tasks (from the ``inspect-evals`` wheel) into task directories, once.

Run::

    python -m openclaw_rl.envs.terminal.convert --out DIR [--wheel inspect_evals-*.whl]

Source: ``inspect_evals/agent_bench/data/agent_bench_os.json`` (26 "dev" tasks) and
``agent_bench_os_test.json`` (119 "test" tasks) with their scripts under ``data/scripts/``
(MIT, inspect-evals 0.28.0). Each record becomes ``DIR/tasks/<task_key>/``:

* ``instruction.md``  the task text (with inspect's path rewrite: ``/root`` and ``/usr`` become
  ``/home/agent``, the agent's home and working directory, as in inspect's Docker image);
* ``setup.sh``        what inspect's Dockerfile does for the task, as one bash script run as root
  in ``/home/agent``: each ``init.code`` line in its own subshell (one ``RUN`` each), an init
  script block, the ``bin/find`` copy, and the ``start`` program in the background;
* ``tests/``          the scripts the evaluation stages at scoring time (``check/*.py``,
  ``checking/*.sh``, ``example/*.sh``), ``expected_answer.txt`` (a ``match``) and
  ``example.sh`` (the task's own example command) when the task has them;
* ``task.json``       everything above plus the evaluation kind (see :mod:`.checks`).

Datasets: ``DIR/train.jsonl`` (the 119 "test" tasks) and ``DIR/heldout.jsonl`` (the 26 "dev"
tasks), rows ``{"prompt", "label", "metadata": {"task_key", "env_type": "terminal", ...}}``,
only tasks that run offline; ``DIR/skipped.json`` lists the others with the reason.
Why dev is held out: it is the split AgentBench and inspect publish as the development set,
and its known-good answers are checked in the tests; training never sees it.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import sys
import zipfile
from pathlib import Path

from openclaw_rl.envs.terminal.wheel import find_wheel

DATA_PREFIX = "inspect_evals/agent_bench/data/"
SPLITS = {"agent_bench_os.json": ("dev", "heldout"), "agent_bench_os_test.json": ("test", "train")}
AGENT_HOME = "/home/agent"
FORMAT_VERSION = 1
ANSWER_HINT = ("\n\nWork in the shell with the tools. If the task asks a question, give the final "
               "answer with the `submit_answer` tool: the answer only, no extra words.")

# Tasks that cannot be reproduced offline, by key, with the reason (besides "needs init/*").
_APT = "its init installs sudo with apt-get, which needs the network"
NOT_OFFLINE: dict[str, str] = {
    "agentbench-os-test-33": _APT, "agentbench-os-test-34": _APT,
    "agentbench-os-test-19": ("its check counts every file under /lib and /usr/include with a "
                              "recursive bash function, twice: minutes on a full host root (the "
                              "Docker image is small), far over the check timeout"),
}


def _rewrite(value):
    """inspect's ``recursively_set_agent_home``: ``/root`` and ``/usr`` -> ``/home/agent``."""
    if isinstance(value, dict):
        return {k: _rewrite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rewrite(v) for v in value]
    if isinstance(value, str):
        return value.replace("/root", AGENT_HOME).replace("/usr", AGENT_HOME)
    return value


def _init_steps(record: dict) -> tuple[list, str | None]:
    create = record.get("create")
    init = create.get("init") if isinstance(create, dict) else None
    steps = init if isinstance(init, list) else [init]
    user = None
    for step in steps:
        if isinstance(step, dict) and step.get("user"):
            user = step["user"]
    return [s for s in steps if s is not None], user


def setup_script(record: dict) -> tuple[str, str | None]:
    """The task's ``setup.sh`` and the reason it cannot run offline (``None`` when it can).

    Follows ``Dockerfile.template.j2`` of inspect-evals 0.28.0, minus the AgentBench git clone
    (whose files inspect blanks anyway, except the ``init/*`` scripts, which it needs and which
    the wheel does not ship).
    """
    steps, _ = _init_steps(record)
    lines = ["#!/bin/bash", f"# setup of AgentBench OS task {record['id']} (generated)",
             f"mkdir -p {AGENT_HOME} && cd {AGENT_HOME} || exit 1"]
    reason = None
    if "bin/find" in str(record):
        lines.append(f"mkdir -p {AGENT_HOME}/bin && cp /usr/bin/find {AGENT_HOME}/bin/find || exit 1")
    for step in steps:
        if isinstance(step, dict) and "code" in step:
            code = step["code"].replace("<random-string>", "$(cat /proc/sys/kernel/random/uuid)")
            for line in code.split("\n"):
                if line.strip():
                    lines += [f"( cd {AGENT_HOME} || exit 1", line, ") || exit 1"]
        elif isinstance(step, dict) and "file" in step:
            reason = (f"its init runs {step['file']} from the AgentBench repository, which the "
                      "inspect-evals wheel does not ship (inspect clones it from GitHub)")
        elif isinstance(step, str):
            if step.strip().startswith("#!/bin/bash") or "\n" in step.strip():
                lines += ["cat > /tmp/init_script.sh <<'INIT_SCRIPT_EOF'", step, "INIT_SCRIPT_EOF",
                          "bash /tmp/init_script.sh; rc=$?; rm -f /tmp/init_script.sh",
                          "[ $rc -eq 0 ] || exit 1"]
            else:
                lines += [f"( cd {AGENT_HOME} || exit 1", step.strip(), ") || exit 1"]
    if "start" in record:
        start = record["start"].strip().rstrip("&").strip()
        lines.append(f"nohup bash -c {shlex.quote(start)} </dev/null >/dev/null 2>&1 &")
    lines.append("exit 0")
    return "\n".join(lines) + "\n", reason


def evaluation_spec(record: dict) -> dict:
    """The evaluation kind of a task (see :mod:`openclaw_rl.envs.terminal.checks`).

    Raises:
        ValueError: an evaluation shape inspect does not support either.
    """
    ev = record["evaluation"]
    example = ev.get("example")
    if isinstance(example, dict) and "code" in example:
        example = {"code": example["code"]}
    elif isinstance(example, dict) and "file" in example:
        example = {"script": example["file"]}
    elif isinstance(example, str):
        example = {"code": example}
    else:
        example = None
    check = ev.get("check")
    if check is None:
        if "match" not in ev:
            raise ValueError(f"task {record['id']}: neither match nor check")
        return {"kind": "match", "match": str(ev["match"]), "example": example}
    if isinstance(check, dict) and "file" in check:
        return {"kind": "check_script", "script": check["file"], "example": example}
    if isinstance(check, dict) and "code" in check:
        return {"kind": "check_command", "command": check["code"], "example": example}
    if isinstance(check, list) and len(check) == 1 and isinstance(check[0], str):
        return {"kind": "check_command", "command": check[0], "example": example}
    if (isinstance(check, list) and len(check) >= 2 and check[0] is None
            and isinstance(check[1], dict) and check[1].get("language") == "python"):
        return {"kind": "compare", "compare_script": check[1]["file"], "example": example,
                "match": str(ev["match"]) if "match" in ev else None}
    raise ValueError(f"task {record['id']}: unsupported check {check!r}")


def convert_record(record: dict, origin: str, split: str, scripts: dict[str, str]) -> dict:
    """One AgentBench record -> the task spec written to ``task.json``."""
    record = _rewrite(record)
    setup, reason = setup_script(record)
    evaluation = evaluation_spec(record)
    _, user = _init_steps(record)
    key = f"agentbench-os-{origin}-{record['id']}"
    needed = [n for n in (evaluation.get("script"), evaluation.get("compare_script"),
                          (evaluation.get("example") or {}).get("script")) if n]
    missing = [n for n in needed if n not in scripts]
    if missing and reason is None:
        reason = f"scripts missing from the wheel: {missing}"
    reason = reason or NOT_OFFLINE.get(key)
    return {"task_key": key, "format_version": FORMAT_VERSION, "origin_split": origin,
            "split": split, "id": record["id"], "instruction": record["description"],
            "user": user, "setup": setup, "evaluation": evaluation,
            "scripts": {n: scripts[n] for n in needed if n in scripts},
            "labels": record.get("labels", []), "offline": reason is None,
            "offline_reason": reason}


def write_task(task: dict, out: Path) -> Path:
    """Write one task directory (instruction.md, setup.sh, tests/, task.json)."""
    d = out / "tasks" / task["task_key"]
    if d.exists():
        shutil.rmtree(d)
    (d / "tests").mkdir(parents=True)
    (d / "instruction.md").write_text(task["instruction"] + "\n")
    (d / "setup.sh").write_text(task["setup"])
    for name, text in task["scripts"].items():
        (d / "tests" / name).parent.mkdir(parents=True, exist_ok=True)
        (d / "tests" / name).write_text(text)
    ev = task["evaluation"]
    if ev.get("match") is not None:
        (d / "tests" / "expected_answer.txt").write_text(ev["match"] + "\n")
    if (ev.get("example") or {}).get("code"):
        (d / "tests" / "example.sh").write_text(ev["example"]["code"] + "\n")
    if ev.get("command"):
        (d / "tests" / "check.sh").write_text(ev["command"] + "\n")
    (d / "task.json").write_text(json.dumps(task, indent=1))
    return d


def dataset_row(task: dict) -> dict:
    """The JSONL row of a task: prompt, label (the fixed answer or ``None``), metadata."""
    ev = task["evaluation"]
    return {"prompt": task["instruction"] + ANSWER_HINT,
            "label": ev.get("match") if ev["kind"] in ("match", "compare") else None,
            "metadata": {"task_key": task["task_key"], "env_type": "terminal",
                         "split": task["split"], "origin_split": task["origin_split"],
                         "eval_kind": ev["kind"], "labels": task["labels"],
                         "user": task["user"]}}


def convert(wheel: Path, out: Path) -> dict:
    """Convert every task of ``wheel`` into ``out``; returns counts per split (and skipped)."""
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        scripts = {n[len(DATA_PREFIX) + len("scripts/"):]: zf.read(n).decode()
                   for n in names if n.startswith(DATA_PREFIX + "scripts/") and not n.endswith("/")}
        records = {f: json.loads(zf.read(DATA_PREFIX + f)) for f in SPLITS}
    out.mkdir(parents=True, exist_ok=True)
    rows: dict[str, list] = {"train": [], "heldout": []}
    skipped = []
    for fname, (origin, split) in SPLITS.items():
        for record in records[fname]:
            task = convert_record(record, origin, split, scripts)
            write_task(task, out)
            if task["offline"]:
                rows[split].append(dataset_row(task))
            else:
                skipped.append({"task_key": task["task_key"], "reason": task["offline_reason"]})
    for split, items in rows.items():
        with open(out / f"{split}.jsonl", "w") as f:
            for row in items:
                f.write(json.dumps(row) + "\n")
    (out / "skipped.json").write_text(json.dumps(skipped, indent=1))
    version = re.search(r"inspect_evals-([^-]+)-", wheel.name)
    manifest = {"source": wheel.name, "inspect_evals_version": version.group(1) if version else None,
                "format_version": FORMAT_VERSION, "train": len(rows["train"]),
                "heldout": len(rows["heldout"]), "skipped": len(skipped)}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def main(argv: list[str] | None = None) -> int:
    """CLI: ``--out DIR [--wheel PATH]``; prints the counts; one-line error on bad input."""
    ap = argparse.ArgumentParser(description="Convert AgentBench OS tasks into task directories.")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--wheel", default=None, help="inspect_evals wheel (default: the one make install fetched)")
    args = ap.parse_args(argv)
    try:
        wheel = Path(args.wheel) if args.wheel else find_wheel()
        manifest = convert(wheel, Path(args.out))
    except (FileNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(manifest))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
