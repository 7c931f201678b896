"""The cold-started tiny policies of the Track 2 learning runs (cached per recipe).

Per family (:mod:`tests.support.track2_tasks`): ``builtin:tiny-qwen3`` fine-tuned
(:func:`openclaw_rl.agentic.cold_start.sft`, every parameter) on the family's demonstrations,
recorded in the real environment and laid out token for token as the server lays out RL
trajectories. Both first decisions are demonstrated equally often for every training wording
(the token-level loss weighs them equally), and the SFT runs until every other reply token is
near-deterministic (:data:`MIN_STRUCTURE_P`): the format is set and RL only has the decision to
move (the log-prob gradient of a token the model is sure of is ``1 - p``, near 0). Built once
into ``$OPENCLAW_RL_CACHE/models/tiny-qwen3-<family>-cold-<recipe key>`` under a file lock and
checked right after the build; :func:`cold_start_path` returns it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from tests.support import track2_tasks

REPO = Path(__file__).resolve().parent.parent.parent
#: every demonstrated reply token except the decision must have at least this probability
MIN_STRUCTURE_P = 0.98
#: the decision's two branches must each keep at least this probability on training wordings
MIN_DECISION_P = 0.2
SFT_STEPS, SFT_LR, SFT_REPAIR_STEPS = 300, 3e-3, 100


def recipe_key(family: str) -> str:
    """A hash of what the family's cold-started model is built from (this file, the family's
    training rows and branches, the cold-start code, the base model, the torch / transformers
    versions)."""
    import torch
    import transformers

    from openclaw_rl.models import resolve_model_path

    base = resolve_model_path("builtin:tiny-qwen3")
    h = hashlib.sha256(family.encode())
    spec = [track2_tasks.rows(family, "train"), [vars(b) for b in track2_tasks.FAMILIES[family]["branches"]]]
    h.update(json.dumps(spec, sort_keys=True).encode())
    for path in (Path(__file__), REPO / "openclaw_rl/agentic/cold_start.py",
                 base / "config.json", base / "tokenizer.json"):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    h.update(f"torch={torch.__version__} transformers={transformers.__version__}".encode())
    return h.hexdigest()[:12]


def _decision_split(items) -> dict[int, int]:
    """For demos paired (same wording, branch A then B): index -> the loss-token index of the
    first token where the pair differs (the decision)."""
    out = {}
    for a, b in zip(items[0::2], items[1::2]):
        k = next(i for i, (x, y) in enumerate(zip(a.ids, b.ids)) if x != y)
        for item in (a, b):
            out[id(item)] = sum(item.loss_mask[1:k])  # loss tokens before position k
    return out


def cold_start_report(model, items) -> dict:
    """``{"min_structure_p", "decision_p": [p of branch A's decision per wording]}``."""
    from openclaw_rl.agentic.cold_start import token_margins

    where = _decision_split(items)
    structure, decision = [], []
    for j, item in enumerate(items):
        p = token_margins(model, item)
        k = where[id(item)]
        structure += p[:k] + p[k + 1:]
        if j % 2 == 0:
            decision.append(p[k])
    return {"min_structure_p": min(structure), "decision_p": decision}


def build_cold_start(family: str, target: Path, seed: int = 0) -> Path:
    """SFT ``builtin:tiny-qwen3`` on ``family``'s demonstrations into ``target`` and check it
    (:data:`MIN_STRUCTURE_P`, :data:`MIN_DECISION_P`), with up to 3 repair rounds.

    Raises:
        RuntimeError: the model still misses a margin after the repair rounds.
    """
    import torch
    from transformers import AutoModelForCausalLM

    from openclaw_rl.agentic.cold_start import demo_ids, sft
    from openclaw_rl.models import load_tokenizer, resolve_model_path

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        tok = load_tokenizer("builtin:tiny-qwen3")
        demos = track2_tasks.demonstrations(family)
        scores = [score for _, score, _ in demos]
        if scores[0::2] != [1.0] * (len(demos) // 2) or max(scores[1::2]) >= 0:
            raise RuntimeError(f"the environment scored {family}'s demonstrations {scores}: expected the first "
                               "branch to solve every task and the second to fail")
        items = [demo_ids(tok, d) for d, _, _ in demos]
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_pretrained(resolve_model_path("builtin:tiny-qwen3"), dtype=torch.float32)
        sft(model, items, steps=SFT_STEPS, lr=SFT_LR, batch_size=4, seed=seed)
        report = cold_start_report(model, items)
        for round_ in range(3):
            if report["min_structure_p"] >= MIN_STRUCTURE_P and min(
                    min(report["decision_p"]), 1 - max(report["decision_p"])) >= MIN_DECISION_P:
                break
            print(f"cold start {family}: repair round {round_ + 1}: {report}", flush=True)
            sft(model, items, steps=SFT_REPAIR_STEPS, lr=SFT_LR / 3, batch_size=4, seed=seed + 1 + round_)
            report = cold_start_report(model, items)
        else:
            raise RuntimeError(f"cold start of {family} misses its margins: {report}")
    finally:
        torch.set_num_threads(threads)
    target.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(target)
    tok.save_pretrained(target)
    (target / "cold_start.json").write_text(json.dumps(report, indent=2))
    return target


def cold_start_path(family: str) -> Path:
    """The cached cold-started model of ``family`` (built on first use, file-locked)."""
    from openclaw_rl.models import _atomic_build, _file_lock, cache_dir

    target = cache_dir() / f"tiny-qwen3-{family}-cold-{recipe_key(family)}"
    with _file_lock(cache_dir() / f".tiny-qwen3-{family}-cold.lock"):
        if not (target / ".complete").exists():
            _atomic_build(target, lambda out: build_cold_start(family, out))
            for old in cache_dir().glob(f"tiny-qwen3-{family}-cold-*"):
                if old != target and old.is_dir() and not old.name.startswith(target.name + "."):
                    shutil.rmtree(old, ignore_errors=True)
    return target
