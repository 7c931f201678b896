"""Track 2 learns: GRPO on real episodes raises the held-out pass rate, per family.

Each family starts from its cold-started ``builtin:tiny-qwen3`` (:mod:`tests.support.track2_cold_start`:
the format is near-deterministic and the one decision that settles the task is ~50/50 by the
recipe) and trains with the family's own plugin file through the real intercept server, real
sandboxed environments and real scoring, in this process without Ray
(:mod:`tests.support.track2_learning`; ``tests/test_track2_scripts.py`` runs the launch scripts).
The held-out wordings were never demonstrated nor trained on. Asserted: the held-out pass rate
rises by >= 0.3 with the Wilson 95 % intervals before and after apart (64 episodes each: 4
wordings x 16), so a run that learns nothing, or learns and then breaks the format, fails (with the
cold start's ~0.3 before and after, a rise of 0.3 is ~3.7 standard errors of the difference of two
64-episode rates). (The training reward of 32 episodes a step is too noisy for a per-step
assertion; the held-out numbers are the test.)
"""

from __future__ import annotations

import os

import pytest
import torch

from openclaw_rl.agentic.sandbox import sandbox_available
from tests.support.track2_learning import run

#: measured 2026-12-01 with tests.support.track2_learning's recipe (LoRA lr 5e-3 + KL 0.2 to the
#: cold start, 20 steps of 4 prompts x 8 samples, 64 held-out episodes per evaluation): this test's
#: bar passed in 3/3 terminal runs, two of them by +0.33 and +0.31 only (its training pass rate
#: plateaus at 0.5-0.7: the failing branch's first token followed by a call without its tag);
#: math-tool: 1/1 run passed (18/64 -> 55/64), but its policy learned to box 5 without calling
#: the interpreter (every practice wording's answer is 5), a shortcut the bar does not catch.
#: With the earlier recipe (2 prompts x 8, 32 held-out episodes): swe passed in 1/1 run (30 steps:
#: 5/32 -> 19/32), gui missed it in 2/2 (20 steps: 4/32 -> 10/32, 10/32 -> 16/32). All on a loaded
#: machine (docs/track2.md, "Learning tests"). Set OPENCLAW_TRACK2_LEARNING=1 to run them (12-22 min
#: per family measured on the loaded 2 cores, ~5 min estimated on a quiet machine; the swe and gui
#: cold starts take 8-16 min once).
NOT_RELIABLE = "the Track 2 learning recipe is not reliable yet: terminal passes only just, gui misses (docs/track2.md)"
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.environ.get("OPENCLAW_TRACK2_LEARNING") != "1", reason=NOT_RELIABLE),
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
