"""GUI environment benchmark: what a MiniWoB++ episode costs in headless Chromium.

Run from the repository root (Debian chromium and the miniwob package installed by ``make install``)::

    python benchmarks/gui_env.py [--repeats 10] [--json OUT]

Measures, p50 and p95 over ``--repeats`` runs, in one process:

1. **Browser start.** ``Browser(640, 480)``: Chromium started headless and Playwright attached
   over CDP (the Playwright driver is started once, before the timing).
2. **Reset.** ``GuiSession.reset`` of a page (load the file:// page, seed, start the episode, read
   the instruction) plus its first observation, over the ``basic`` training pages in turn.
3. **Step.** One ``pyautogui.click`` on an empty spot plus the next observation (screenshot and
   element text), then the same for a text policy's episode (``"screenshot": false`` in the task
   config: the element text only, as ``GuiTextEnv`` asks for a policy that cannot see images).
4. **Observation parts.** The screenshot and the element text alone.

Baseline: one Playwright round trip (``page.evaluate("1")``) on the same browser: the ratios say
how many round trips each operation costs, which moves less with the machine's load than the times.
Also prints the page counts of the train / eval split.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from openclaw_rl.envs.gui import miniwob_tasks as mw  # noqa: E402
from openclaw_rl.envs.gui.browser import Browser  # noqa: E402
from openclaw_rl.envs.gui.config import GuiConfig  # noqa: E402
from openclaw_rl.envs.gui.dom_text import DOM_ELEMENTS_JS  # noqa: E402
from openclaw_rl.envs.gui.session import GuiSession  # noqa: E402


def _stats(xs: list[float]) -> dict:
    xs = sorted(xs)
    return {"p50_ms": round(1000 * statistics.median(xs), 1),
            "p95_ms": round(1000 * xs[min(len(xs) - 1, int(0.95 * len(xs)))], 1), "n": len(xs)}


def _time(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> int:
    """Run the measurements and print a table (and ``--json``)."""
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    n = max(2, args.repeats)
    warm = Browser(640, 480)  # starts the shared Playwright driver outside the timing
    warm.kill()
    starts = []
    for _ in range(n):
        t0 = time.perf_counter()
        b = Browser(640, 480)
        starts.append(time.perf_counter() - t0)
        b.kill()
    browser = Browser(640, 480)
    session = GuiSession(browser, GuiConfig(observation_type="screenshot_a11y_tree"))
    base = _time(lambda: browser.evaluate("1"), n * 5)
    pages = mw.task_pages("train", basic_only=True)
    resets = []
    for i in range(n):
        t0 = time.perf_counter()
        session.reset({"task": pages[i % len(pages)], "seed": i})
        resets.append(time.perf_counter() - t0)
    session.reset({"task": "click-test-2", "seed": 0})
    steps = _time(lambda: session.step("pyautogui.click(600, 400)"), n)
    session.reset({"task": "click-test-2", "seed": 0, "screenshot": False})
    text_steps = _time(lambda: session.step("pyautogui.click(600, 400)"), n)
    shots = _time(browser.screenshot, n)
    texts = _time(lambda: browser.evaluate(DOM_ELEMENTS_JS, 200), n)
    browser.kill()
    b50 = statistics.median(base)
    result = {"baseline_roundtrip": _stats(base), "browser_start": _stats(starts), "reset": _stats(resets),
              "step": _stats(steps), "step_text_policy": _stats(text_steps), "screenshot": _stats(shots), "element_text": _stats(texts),
              "pages": {"total": len(mw.page_names()), "train": len(mw.task_pages("train")),
                        "eval": len(mw.task_pages("eval")), "train_basic": len(mw.task_pages("train", True)),
                        "eval_basic": len(mw.task_pages("eval", True))}}
    print(f"{'operation':<16}{'p50 ms':>10}{'p95 ms':>10}{'x round trip':>14}")
    for key in ("baseline_roundtrip", "browser_start", "reset", "step", "step_text_policy", "screenshot",
                "element_text"):
        s = result[key]
        print(f"{key:<16}{s['p50_ms']:>10}{s['p95_ms']:>10}{s['p50_ms'] / (1000 * b50):>14.1f}")
    print("pages:", result["pages"])
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
