"""Track 2 learns: GRPO on real episodes raises the held-out pass rate, per family.

Each family starts from its cold-started ``builtin:tiny-qwen3`` (:mod:`tests.support.track2_cold_start`:
the format is near-deterministic and the one decision that settles the task is ~50/50 by the
recipe) and trains with the family's own plugin file through the real intercept server, real
sandboxed environments and real scoring, in this process without Ray
(:mod:`tests.support.track2_learning`; ``tests/test_track2_scripts.py`` runs the launch scripts).
The held-out wordings were never demonstrated nor trained on. Asserted: the held-out pass rate's
Wilson 95 % intervals before and after (64 episodes each: 4 wordings x 16) do not overlap, a
significant rise (with ~0.25 before, the rate after must be >= ~0.48), so a run that learns
nothing, or learns and then breaks the format, fails; and the trainer's log-probs are the
sampler's. (The training reward of 32 episodes a step is too noisy for a per-step assertion; the
held-out numbers are the test.)
"""

from __future__ import annotations

import os

import pytest
import torch

from openclaw_rl.agentic.sandbox import sandbox_available
from tests.support.track2_learning import run

#: measured 2026-12-01 with tests.support.track2_learning's recipe (LoRA lr 5e-3 + KL 0.2 to the
#: cold start, 20 steps of 4 prompts x 8 samples, 64 held-out episodes per evaluation): every run
#: passed this bar (math-tool 2/2, terminal 4/4, gui 3/3, swe 2/2; the closest, gui and terminal,
#: by 0.07; docs/track2.md, "Learning tests"), 12-45 minutes a family on the loaded 2 cores, the
#: swe and gui cold starts 8-16 minutes once. Too long for make test: `make test-learning` runs them.
OPT_IN = "the Track 2 learning tests take 12-45 minutes a family: make test-learning (OPENCLAW_TRACK2_LEARNING=1) runs them"
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.environ.get("OPENCLAW_TRACK2_LEARNING") != "1", reason=OPT_IN),
              pytest.mark.skipif(not sandbox_available()[0], reason=f"no sandbox: {sandbox_available()[1]}")]


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _check(result: dict) -> None:
    before, after, steps = result["before"], result["after"], result["steps"]
    assert before["failed"] == 0 and after["failed"] == 0, result
    assert after["ci95"][0] > before["ci95"][1], result  # the 95 % intervals do not overlap: a significant rise
    assert all(s["logprob_gap"] < 0.01 for s in steps), steps  # trained on what was sampled


@pytest.mark.parametrize("family", ["math-tool", "terminal", "gui", "swe"])
def test_grpo_raises_the_heldout_pass_rate(family, tmp_path):
    _check(run(family, tmp_path))
