"""MiniWoB++ tasks: the 130 pages of the ``miniwob`` package, their train / eval split, and the
JavaScript that runs an episode and reads MiniWoB's own reward.

Pages live in ``miniwob/html/miniwob/<name>.html`` inside the installed package and are loaded
as ``file://`` URLs (``MINIWOB_BASE_URL``, miniwob's own variable, points elsewhere, e.g. an HTTP
server of the same folder). An episode is run the way miniwob's gymnasium environment runs one
(``miniwob/selenium_instance.py``): load the page, ``Math.seedrandom(seed)``,
``core.setDataMode(mode)``, ``core.startEpisodeReal()``, wait for ``WOB_TASK_READY``; the
instruction is ``core.getUtterance()``; the outcome is read from ``WOB_DONE_GLOBAL``,
``WOB_RAW_REWARD_GLOBAL`` (the task's reward before its time discount) and ``WOB_REWARD_REASON``.
Success (raw reward > 0) scores +1, anything else (a wrong answer, the task not finished, the
page timer running out) -1. The page's episode timer (``core.EPISODE_MAX_TIME``, 7-30 s in the
pages, made for scripted agents) is raised to the task config's ``time_limit_s`` (default 600 s)
so a model that thinks for seconds per step is not timed out by the page.

**Split** (:func:`split_of`): pages are grouped by their base task (the name without the
``-nodelay``/``-easy``/``-medium``/``-hard``/``-transfer``/``-soft``/``-large``/``-turk``/``-nl``/
``-2``/``-3`` variant suffixes, so ``click-tab-2-hard`` and ``click-tab`` share a group); a group is
held out when ``sha256(base)`` is 0 mod 5. Train and eval pages are disjoint and no base task is
in both (upstream's train and test lists are identical; ours are not).

**Input** (:data:`SPECIAL_INPUT`): the pages that need more than clicking and typing at element
coordinates (drag and drop, text selection by dragging, drawing, hovering, fast-moving targets or
targets drawn without DOM elements) are listed by kind; every other page needs no special input.
"""

from __future__ import annotations

import hashlib
import os
import re
from functools import lru_cache
from pathlib import Path

__all__ = ["SPECIAL_INPUT", "base_task", "html_dir", "input_kind", "page_names", "page_url", "split_of",
           "task_pages", "RESET_JS", "STATE_JS", "UTTERANCE_JS"]

SPECIAL_INPUT: dict[str, tuple[str, ...]] = {
    "drag": ("drag-box", "drag-circle", "drag-cube", "drag-items", "drag-items-grid", "drag-shapes",
             "drag-shapes-2", "drag-single-shape", "drag-sort-numbers", "highlight-text", "highlight-text-2",
             "resize-textarea", "use-slider", "use-slider-2", "draw-circle", "draw-line"),
    "hover": ("hover-shape",),
    "moving-target": ("chase-circle", "moving-items", "simon-says", "hot-cold"),
    "canvas": ("bisect-angle", "circle-center", "find-midpoint", "right-angle", "count-shape", "count-sides",
               "identify-shape", "grid-coordinate", "visual-addition", "use-colorwheel", "use-colorwheel-2",
               "click-pie", "click-pie-nodelay", "click-shape", "click-color", "click-shades"),
}
_SUFFIX = re.compile(r"(-(nodelay|easy|medium|hard|transfer|soft|large|turk|nl|2|3))+$")


@lru_cache(maxsize=1)
def html_dir() -> Path:
    """The ``miniwob/html`` folder of the installed ``miniwob`` package.

    Raises:
        RuntimeError: the package is not installed (``make install`` installs it).
    """
    try:
        import miniwob
    except ImportError as exc:
        raise RuntimeError("the miniwob package is not installed (make install, or pip install miniwob)") from exc
    return Path(miniwob.__file__).resolve().parent / "html"


@lru_cache(maxsize=1)
def page_names() -> tuple[str, ...]:
    """The MiniWoB++ page names, sorted (``click-button``, ...; 130 in miniwob 1.x)."""
    return tuple(sorted(p.stem for p in (html_dir() / "miniwob").glob("*.html")))


def base_task(name: str) -> str:
    """``name`` without its variant suffixes (``click-tab-2-hard`` -> ``click-tab``)."""
    return _SUFFIX.sub("", name) or name


def split_of(name: str) -> str:
    """``"eval"`` when the page's base task is held out (``sha256(base) % 5 == 0``), else ``"train"``."""
    digest = int(hashlib.sha256(base_task(name).encode()).hexdigest(), 16)
    return "eval" if digest % 5 == 0 else "train"


def input_kind(name: str) -> str:
    """``basic`` (click and type suffice) or the kind of special input the page needs
    (:data:`SPECIAL_INPUT`)."""
    for kind, pages in SPECIAL_INPUT.items():
        if name in pages:
            return kind
    return "basic"


def task_pages(split: str, basic_only: bool = False) -> list[str]:
    """The page names of ``split`` (``train`` / ``eval``), optionally only the ``basic`` ones."""
    if split not in ("train", "eval"):
        raise ValueError(f"split must be train or eval, got {split!r}")
    return [n for n in page_names() if split_of(n) == split and (not basic_only or input_kind(n) == "basic")]


def normalise_task(name: str) -> str:
    """A page name from ``click-button``, ``miniwob/click-button``, ``miniwob.click-button`` or
    ``click-button.html``.

    Raises:
        ValueError: not one of the package's pages.
    """
    raw = str(name).strip()
    short = raw.removesuffix(".html").rsplit("/", 1)[-1]
    short = short.removeprefix("miniwob.")
    if short not in page_names():
        raise ValueError(f"unknown MiniWoB task {raw!r} ({len(page_names())} pages, e.g. click-button)")
    return short


def page_url(name: str) -> str:
    """The page's URL: ``$MINIWOB_BASE_URL/<name>.html``, by default a ``file://`` URL into the package."""
    base = os.environ.get("MINIWOB_BASE_URL") or (html_dir() / "miniwob").as_uri() + "/"
    return base.rstrip("/") + f"/{normalise_task(name)}.html"


#: starts an episode: arg = [seed, data mode, time limit ms]; returns true once core exists
RESET_JS = """([seed, mode, limitMs]) => {
  if (typeof core === 'undefined' || typeof core.startEpisodeReal !== 'function') return false;
  if (seed !== null) Math.seedrandom(String(seed));
  if (mode) core.setDataMode(mode);
  core.EPISODE_MAX_TIME = limitMs;
  core.startEpisodeReal();
  return true;
}"""

#: the episode's state, as miniwob's get_metadata reads it
STATE_JS = """() => (typeof WOB_DONE_GLOBAL === 'undefined') ? null : ({
  done: WOB_DONE_GLOBAL, env_reward: WOB_REWARD_GLOBAL, raw_reward: WOB_RAW_REWARD_GLOBAL,
  reason: WOB_REWARD_REASON === null ? null : String(WOB_REWARD_REASON),
  ready: (typeof WOB_TASK_READY === 'undefined') ? true : !!WOB_TASK_READY})"""

#: the instruction (core.getUtterance returns a string, or {utterance, fields} in some pages)
UTTERANCE_JS = """() => { const u = core.getUtterance(); return (typeof u === 'string') ? u : u.utterance; }"""
