"""Helpers for the user-control tests (feedback, lessons, forgetting): a real server's
conversations through the ``openai`` SDK, and the real rule-based judges (lexical PRM, extractive
hints) run over the store as the training job's judge loop does."""

from __future__ import annotations

import asyncio

import openai

from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.judges.hint_extract import ExtractiveHintBackend
from openclaw_rl.judges.hints import HintJudge
from openclaw_rl.judges.lexical import LexicalBackend
from openclaw_rl.judges.prm import PRMJudge
from openclaw_rl.models import load_tokenizer
from openclaw_rl.opd.judge import CombineTurnJudge
from openclaw_rl.rollout.judge_loop import JudgeLoop

AUTH = {"Authorization": "Bearer sk-test"}


def client(server) -> openai.OpenAI:
    """An ``openai`` client of a :class:`tests.support.server.ServerHandle`."""
    return openai.OpenAI(base_url=server.base_url, api_key=server.api_key, max_retries=0, timeout=120)


def converse(server, session: str, user_texts: list[str], max_tokens: int = 6) -> list[str]:
    """One conversation of ``len(user_texts)`` requests in session ``session``; each user text
    after the first is the next state of the reply before it. Returns the completion ids."""
    c, messages, ids = client(server), [], []
    for text in user_texts:
        messages.append({"role": "user", "content": text})
        r = c.chat.completions.create(model="policy", messages=messages, max_tokens=max_tokens, temperature=0,
                                      extra_headers={"X-Session-Id": session})
        ids.append(r.id)
        messages.append({"role": "assistant", "content": r.choices[0].message.content or ""})
    return ids


def judge_all(buffer_dir, model: str = "builtin:tiny-qwen3") -> int:
    """Judge every ready turn of the store with Combine's real rule-based judges (the lexical PRM
    and the extractive hint judge; accepted hints become lessons); returns how many were judged."""
    store = TrajectoryStore(buffer_dir)
    try:
        judge = CombineTurnJudge(PRMJudge(LexicalBackend(), majority_vote_n=1),
                                 HintJudge(ExtractiveHintBackend()), load_tokenizer(model))
        loop = JudgeLoop(store, judge, num_workers=2)
        total = 0
        while (n := asyncio.run(loop.judge_once(limit=32))):
            total += n
        return total
    finally:
        store.close()


def perturbed_copy(folder, seed: int, model: str = "builtin:tiny-qwen3"):
    """Save ``model`` with every weight moved by N(0, 0.5) noise (seed ``seed``) into ``folder``:
    a weight version that answers differently; returns the folder."""
    import torch

    from openclaw_rl.models import load_model

    m = load_model(model)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.5)
    m.save_pretrained(folder)
    load_tokenizer(model).save_pretrained(folder)
    return folder


def files_containing(folder, needle: str) -> list[str]:
    """Every file under ``folder`` (the database, its write-ahead log and journal included) whose
    bytes contain ``needle`` (UTF-8)."""
    from pathlib import Path

    data = needle.encode("utf-8")
    return sorted(str(p) for p in Path(folder).rglob("*") if p.is_file() and data in p.read_bytes())
