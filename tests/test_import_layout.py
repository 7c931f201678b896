"""No project module imports another inside a function body to dodge an import circle.

An import inside a function is allowed for what it is for: keeping a heavy or optional dependency
(ray, transformers, selenium, the vision stack) out of a process that does not use it. It is not
allowed as a way around a circle: when the imported module reaches the importing one through
module-level imports, the two belong together or a third module is missing (DEVELOPERS.md,
"Small, clear files"). ``slime/`` is stricter still (``tests/slime/test_slime_seam.py``)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("openclaw_rl", "slime")


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            name = ".".join(path.relative_to(REPO).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = path
    return out


def _targets(node: ast.ImportFrom | ast.Import, mods: dict[str, Path]) -> set[str]:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif node.module and node.level == 0:
        names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    else:
        return set()
    return {n for n in names if n in mods}


def import_graph(mods: dict[str, Path]) -> tuple[dict[str, set[str]], list[tuple[str, int, str]]]:
    """``(top, inner)``: the module-level project imports of each module (a module also depends on
    its package, whose ``__init__`` runs first), and every project import inside a function body
    as ``(module, line, imported module)``."""
    top: dict[str, set[str]] = {n: set() for n in mods}
    inner = []
    for name, path in mods.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                targets = _targets(node, mods)
                if _at_module_level(tree, node):
                    top[name] |= targets
                else:
                    inner += [(name, node.lineno, t) for t in sorted(targets)]
    return top, inner


def _at_module_level(tree: ast.Module, node: ast.AST) -> bool:
    """True when ``node`` runs at import time: not inside a function (a class body or an ``if``/
    ``try`` at the top still runs)."""
    stack = [(child, False) for child in tree.body]
    while stack:
        current, in_function = stack.pop()
        if current is node:
            return not in_function
        nested = in_function or isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        stack += [(child, nested) for child in ast.iter_child_nodes(current)]
    return False


def _reaches(top: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        m = todo.pop()
        if m == goal:
            return True
        if m in seen:
            continue
        seen.add(m)
        todo += top.get(m, ())
    return False


def circles_dodged(mods: dict[str, Path]) -> list[str]:
    """Imports inside a function whose target reaches the importing module through module-level
    imports, as ``module:line -> target``. A package ``__init__`` importing its own submodule
    lazily is not a circle (the submodule needs its package either way)."""
    top, inner = import_graph(mods)
    return [f"{m}:{line} -> {t}" for m, line, t in inner
            if not t.startswith(m + ".") and _reaches(top, t, m)]


def test_no_import_inside_a_function_closes_a_circle():
    mods = _modules()
    assert len(mods) > 200
    assert circles_dodged(mods) == []


def test_the_check_finds_a_dodged_circle(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("from pkg.b import helper\n")
    (tmp_path / "pkg" / "b.py").write_text("def helper():\n    from pkg.a import thing\n    return thing\n")
    (tmp_path / "pkg" / "c.py").write_text("def lazy():\n    import pkg.b\n")  # no circle: b never reaches c
    mods = {f"pkg.{p.stem}": p for p in (tmp_path / "pkg").glob("*.py")}
    assert circles_dodged(mods) == ["pkg.b:2 -> pkg.a"]


def test_a_server_start_imports_no_sdk_types_until_their_api_is_asked_for():
    """The server's app loads without ``anthropic`` and ``openai`` (their reply types cost 2.7 CPU-s
    per start, benchmarks/server_start.py); the renderer of each API brings its SDK on first use."""
    code = ("import sys, openclaw_rl.server.app as app\n"
            "from openclaw_rl.server import messages_api, responses_api\n"
            "before = [m for m in ('anthropic', 'openai') if m in sys.modules]\n"
            "messages_api.renderer_class(); responses_api.renderer_module()\n"
            "print(before, 'anthropic' in sys.modules, 'openai' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[-2] == "[] True True", out.stdout + out.stderr


def _top_level_names(body: list[ast.stmt]) -> tuple[set[str], bool]:
    """The names a module body binds outside functions and classes (also in top-level ``if`` /
    ``try`` / ``with`` blocks), and whether it has ``import *`` (its names cannot be known)."""
    names, star = set(), False
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                star |= a.name == "*"
                names.add(a.asname or a.name.split(".")[0])
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        else:
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner, inner_star = _top_level_names(getattr(node, field, []) or [])
                names, star = names | inner, star or inner_star
    return names, star


def test_every_name_in_all_is_defined_in_its_module():
    """``from module import *`` fails on a name ``__all__`` lists but the module no longer defines
    (``envs/gui/browser.py`` listed ``check_backend`` and ``make_browser`` after they moved to
    ``envs/gui/backends.py``). Read from the source: modules with ``import *`` or a module-level
    ``__getattr__`` (names loaded on first use) are left out."""
    missing, checked = [], 0
    for name, path in _modules().items():
        tree = ast.parse(path.read_text(), filename=str(path))
        declared = [node.value for node in tree.body if isinstance(node, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)]
        if not declared or not isinstance(declared[-1], (ast.List, ast.Tuple)):
            continue
        defined, star = _top_level_names(tree.body)
        if star or "__getattr__" in defined:
            continue
        checked += 1
        missing += [f"{name}: {e.value}" for e in declared[-1].elts
                    if isinstance(e, ast.Constant) and e.value not in defined]
    assert checked > 100 and missing == [], missing
