"""The ``pyautogui`` action space (``GUI_ACTION_SPACE=pyautogui``), parsed safely.

A GUI agent writes its action as pyautogui code (OSWorld's and upstream's ``pyautogui`` action
space) or as one of the special actions ``WAIT``, ``DONE``, ``FAIL``. :func:`parse_action` turns
the text into a list of :class:`Op` without running it: the text is parsed with :mod:`ast`, every
statement must be a call ``pyautogui.<function>(<literal>, ..., key=<literal>)`` (arguments read
with :func:`ast.literal_eval`, so no name, attribute or expression is ever evaluated), ``import
pyautogui`` / ``import time`` lines are skipped and ``time.sleep(s)`` becomes a wait. A fenced
code block (```` ```python ... ``` ````) is unwrapped first.

Supported functions (pyautogui's names and argument order): ``click(x, y, clicks=1,
button='left')``, ``doubleClick(x, y)``, ``rightClick(x, y)``, ``moveTo(x, y)``, ``dragTo(x, y,
button='left')`` (press at the current pointer, move, release), ``mouseDown(x?, y?)``,
``mouseUp(x?, y?)``, ``typewrite(text | [keys])`` / ``write(text)``, ``press(key | [keys],
presses=1)``, ``hotkey(key, ...)``, ``keyDown(key)``, ``keyUp(key)``, ``scroll(clicks, x?, y?)``
(positive scrolls up, as pyautogui). Key names are pyautogui's (``enter``, ``tab``, ``ctrl``,
``pagedown``, ``f5``, single characters, ...), mapped to Playwright's by :func:`playwright_key`.

Errors are :class:`ActionError` with a one-line message meant for the agent's observation.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ActionError", "Op", "SPECIAL_ACTIONS", "parse_action", "playwright_key", "ACTION_SPACE_HELP"]

SPECIAL_ACTIONS = ("WAIT", "DONE", "FAIL")
MAX_STATEMENTS = 16
MAX_TEXT = 2000
MAX_SLEEP_S = 5.0

ACTION_SPACE_HELP = (
    "Actions (pyautogui; x, y are screen pixels): pyautogui.click(x, y), pyautogui.doubleClick(x, y), "
    "pyautogui.rightClick(x, y), pyautogui.moveTo(x, y), pyautogui.dragTo(x, y), "
    "pyautogui.typewrite('text'), pyautogui.press('enter'), pyautogui.hotkey('ctrl', 'a'), "
    "pyautogui.scroll(-3); or WAIT, DONE (the task is finished), FAIL (it cannot be done).")


class ActionError(ValueError):
    """An action the environment cannot run (one line, for the agent)."""


@dataclass(frozen=True)
class Op:
    """One primitive input operation.

    Attributes:
        kind: ``click``, ``move``, ``drag``, ``mouse_down``, ``mouse_up``, ``type``, ``press``,
            ``hotkey``, ``key_down``, ``key_up``, ``scroll``, ``sleep``, or a special action
            ``WAIT`` / ``DONE`` / ``FAIL``.
        x, y: screen pixels (None where the op takes no point or keeps the current one).
        button: ``left`` / ``right`` / ``middle``.
        clicks: clicks of a ``click``; presses of a ``press``.
        text: the text of a ``type``.
        keys: Playwright key names (``press``: pressed one after another; ``hotkey``: chord).
        amount: scroll clicks (positive up) or sleep seconds.
    """

    kind: str
    x: float | None = None
    y: float | None = None
    button: str = "left"
    clicks: int = 1
    text: str = ""
    keys: tuple[str, ...] = field(default_factory=tuple)
    amount: float = 0.0


_KEYS = {
    "enter": "Enter", "return": "Enter", "tab": "Tab", "space": " ", "backspace": "Backspace",
    "delete": "Delete", "del": "Delete", "esc": "Escape", "escape": "Escape", "up": "ArrowUp",
    "down": "ArrowDown", "left": "ArrowLeft", "right": "ArrowRight", "home": "Home", "end": "End",
    "pageup": "PageUp", "pagedown": "PageDown", "pgup": "PageUp", "pgdn": "PageDown",
    "insert": "Insert", "ctrl": "Control", "ctrlleft": "Control", "ctrlright": "Control",
    "control": "Control", "shift": "Shift", "shiftleft": "Shift", "shiftright": "Shift", "alt": "Alt",
    "altleft": "Alt", "altright": "Alt", "option": "Alt", "cmd": "Meta", "command": "Meta",
    "win": "Meta", "winleft": "Meta", "super": "Meta", "meta": "Meta", "capslock": "CapsLock",
    "\n": "Enter", "\t": "Tab", " ": " ",
}


def playwright_key(name: Any) -> str:
    """pyautogui key name -> Playwright key name (``'enter'`` -> ``'Enter'``, ``'f5'`` -> ``'F5'``,
    a single character unchanged).

    Raises:
        ActionError: not a string or an unknown key.
    """
    if not isinstance(name, str) or not name:
        raise ActionError(f"key must be a non-empty string, got {name!r}")
    if len(name) == 1:
        return _KEYS.get(name, name)
    low = name.lower()
    if low in _KEYS:
        return _KEYS[low]
    if re.fullmatch(r"f([1-9]|1[0-9]|2[0-4])", low):
        return low.upper()
    raise ActionError(f"unknown key {name!r} (use pyautogui key names: enter, tab, ctrl, shift, a, ...)")


def _unfence(text: str) -> str:
    m = re.search(r"```(?:python|py)?\s*\n(.*?)```", text, re.S)
    return m.group(1) if m else text


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ActionError(f"{what} must be a number, got {value!r}")
    return float(value)


def _point(args: list, kwargs: dict, fn: str, required: bool) -> tuple[float | None, float | None]:
    x = kwargs.pop("x", args.pop(0) if args else None)
    y = kwargs.pop("y", args.pop(0) if args else None)
    if isinstance(x, (tuple, list)) and len(x) == 2 and y is None:  # click((x, y))
        x, y = x
    if x is None and y is None and not required:
        return None, None
    if x is None or y is None:
        raise ActionError(f"pyautogui.{fn} needs both x and y")
    return _number(x, "x"), _number(y, "y")


def _keys_of(value: Any) -> tuple[str, ...]:
    if isinstance(value, (list, tuple)):
        if not value:
            raise ActionError("empty key list")
        return tuple(playwright_key(k) for k in value)
    return (playwright_key(value),)


def _op(fn: str, args: list, kwargs: dict) -> Op:
    button = kwargs.pop("button", "left")
    if button not in ("left", "right", "middle"):
        raise ActionError(f"button must be left, right or middle, got {button!r}")
    kwargs.pop("duration", None), kwargs.pop("interval", None), kwargs.pop("tween", None)  # timing hints
    if fn in ("click", "doubleClick", "rightClick", "tripleClick", "middleClick"):
        x, y = _point(args, kwargs, fn, required=False)
        clicks = {"doubleClick": 2, "tripleClick": 3}.get(fn, kwargs.pop("clicks", args.pop(0) if args else 1))
        if not isinstance(clicks, int) or isinstance(clicks, bool) or not 1 <= clicks <= 3:
            raise ActionError(f"clicks must be 1-3, got {clicks!r}")
        button = {"rightClick": "right", "middleClick": "middle"}.get(fn, button)
        op = Op("click", x, y, button=button, clicks=clicks)
    elif fn in ("moveTo", "dragTo", "mouseDown", "mouseUp"):
        x, y = _point(args, kwargs, fn, required=fn in ("moveTo", "dragTo"))
        op = Op({"moveTo": "move", "dragTo": "drag", "mouseDown": "mouse_down", "mouseUp": "mouse_up"}[fn],
                x, y, button=button)
    elif fn in ("typewrite", "write"):
        text = kwargs.pop("message", args.pop(0) if args else None)
        if isinstance(text, (list, tuple)):
            op = Op("press", keys=_keys_of(text))
        elif isinstance(text, str):
            if len(text) > MAX_TEXT:
                raise ActionError(f"text longer than {MAX_TEXT} characters")
            op = Op("type", text=text)
        else:
            raise ActionError(f"pyautogui.{fn} needs a string, got {text!r}")
    elif fn == "press":
        keys = kwargs.pop("keys", args.pop(0) if args else None)
        presses = kwargs.pop("presses", args.pop(0) if args else 1)
        if not isinstance(presses, int) or isinstance(presses, bool) or not 1 <= presses <= 50:
            raise ActionError(f"presses must be 1-50, got {presses!r}")
        op = Op("press", keys=_keys_of(keys), clicks=presses)
    elif fn == "hotkey":
        if not args:
            raise ActionError("pyautogui.hotkey needs at least one key")
        op, args = Op("hotkey", keys=tuple(playwright_key(k) for k in args)), []
    elif fn in ("keyDown", "keyUp"):
        key = kwargs.pop("key", args.pop(0) if args else None)
        op = Op("key_down" if fn == "keyDown" else "key_up", keys=(playwright_key(key),))
    elif fn in ("scroll", "vscroll"):
        clicks = _number(kwargs.pop("clicks", args.pop(0) if args else None), "scroll clicks")
        x, y = _point(args, kwargs, fn, required=False)
        op = Op("scroll", x, y, amount=clicks)
    else:
        raise ActionError(f"pyautogui.{fn} is not supported here ({ACTION_SPACE_HELP})")
    if args or kwargs:
        extra = [repr(a) for a in args] + list(kwargs)
        raise ActionError(f"pyautogui.{fn}: unexpected argument(s) {', '.join(extra)}")
    return op


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ActionError(f"arguments must be literals (numbers, strings, lists), got "
                          f"{ast.unparse(node)[:60]!r}") from None


def parse_action(text: Any) -> list[Op]:
    """Parse an agent's action (module docstring) into operations, without executing anything.

    Args:
        text: pyautogui code (one or more statements, optionally fenced) or ``WAIT`` / ``DONE`` / ``FAIL``.

    Returns:
        The operations in order (a special action is a single ``Op(kind="WAIT"|"DONE"|"FAIL")``).

    Raises:
        ActionError: not a string, empty, not Python, a statement that is not a supported
            ``pyautogui`` call with literal arguments, or more than 16 statements.
    """
    if not isinstance(text, str):
        raise ActionError(f"the action must be a string, got {type(text).__name__}")
    code = _unfence(text).strip()
    if code.strip("`'\" .").upper() in SPECIAL_ACTIONS:
        return [Op(code.strip("`'\" .").upper())]
    if not code:
        raise ActionError("empty action (write pyautogui code, or WAIT / DONE / FAIL)")
    try:
        tree = ast.parse(code, mode="exec")
    except (SyntaxError, ValueError) as exc:
        raise ActionError(f"the action is not valid Python: {getattr(exc, 'msg', exc)}") from None
    ops: list[Op] = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            names = {a.name for a in stmt.names} | ({stmt.module} if isinstance(stmt, ast.ImportFrom) else set())
            if names <= {"pyautogui", "time"}:
                continue
            raise ActionError(f"only 'import pyautogui' / 'import time' are allowed, got {ast.unparse(stmt)[:60]!r}")
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Name) and stmt.value.id in SPECIAL_ACTIONS:
            ops.append(Op(stmt.value.id))
            continue
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and isinstance(call.func.value, ast.Name)):
            raise ActionError(f"each statement must be a pyautogui.<function>(...) call, got {ast.unparse(stmt)[:60]!r}")
        module, fn = call.func.value.id, call.func.attr
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            raise ActionError("*args / **kwargs are not allowed in actions")
        args = [_literal(a) for a in call.args]
        kwargs = {k.arg: _literal(k.value) for k in call.keywords}
        if module == "time" and fn == "sleep":
            seconds = _number(args[0] if args else kwargs.get("secs"), "sleep seconds")
            ops.append(Op("sleep", amount=max(0.0, min(seconds, MAX_SLEEP_S))))
        elif module == "pyautogui":
            ops.append(_op(fn, args, kwargs))
        else:
            raise ActionError(f"{module}.{fn} is not allowed (only pyautogui.* and time.sleep)")
        if len(ops) > MAX_STATEMENTS:
            raise ActionError(f"more than {MAX_STATEMENTS} statements in one action")
    if not ops:
        raise ActionError("the action has no pyautogui call")
    return ops
