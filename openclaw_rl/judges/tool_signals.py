"""Structural verdicts for a tool-call turn: what the tool returned, and what the call did.

Read by the ``classifier`` PRM mode (:mod:`.classifier`) for every turn whose next state is a tool
result, and for every turn with tool calls (a repeated call is a failure whatever it returned).
In order, the first rule that applies decides:

1. **repeated call** (``-1``): a call of this turn has the same name and the same arguments (JSON
   compared after parsing) as a call the assistant already made earlier in the conversation with
   no state-changing call since (an edit, a write, an append, an install, a restart): it can only return what it
   returned before (the reference system's judge rewarded such loops); running the tests again
   after an edit is not a repeat, and neither is a call whose result now differs from what the
   same call returned before (something changed that the rule could not see, e.g. a restart);
2. **overwrote a user's file** (``-1``): a writing call (a write / save / create tool, a shell
   command with ``>``, ``tee``, ``cp``, ``mv``, ``sed -i`` onto a path, or code in a ``code`` /
   ``script`` argument that opens a file for writing, ``open(f, "w")``, ``df.to_csv(f)``,
   ``Path(f).write_text``, ``np.save(f)``) whose target file already existed (it
   is named earlier in the conversation or in the request, or the result says it was overwritten
   or that its previous contents were replaced) while the user's request did not ask to write to
   that file (an edit verb under a negation, "suggest changes but don't change it", or advice,
   "review it and suggest fixes", asks for none; a creating verb, "generate a requirements.txt",
   "export to results.csv", asks for the file), or asked to leave it as it is ("keep notes.md as it
   is", "don't touch config.yaml"); or the request asked to add to the file or keep what it holds
   ("add a section to README.md, keep the rest", "don't lose my keys") and the result reports it
   smaller ("14 lines -> 3 lines", "wrote 49 bytes ... previous size 6,118 bytes");
3. **error caused by the call** (``-1``), read from the result's structure, not from words
   anywhere in it: a JSON object with an ``error`` key (unless the request asked for errors: an
   error tracker's event is data), ``ok`` / ``success`` false, a non-zero
   ``exit_code`` / ``returncode`` or an HTTP status 400-599; a Python traceback or an
   ``XxxError: ...`` line outside a log line (data when the call itself searched for such text,
   ``grep -A4 Traceback app.log``); ``command not found``, ``No such file or directory``,
   ``Permission denied``, ``Access denied``, an authentication failure (also as German, French,
   Spanish and Chinese shells print them, and Windows' "is not recognized as an internal or
   external command" in those languages), a Node.js stack frame, ``fatal:`` / ``error:`` opening
   the result; ``exit code N`` (N > 0, also ``Exit-Code N``, ``code de sortie N``, ``código de
   salida N``, ``退出码 N``); an ``HTTP/1.1 404`` status line or ``404 Not Found``; a timeout,
   segfault or refused connection. Exit codes and HTTP statuses inside log lines are data, as the
   log lines are;
3a. **tests still fail after a fix** (``-1``): the user asked for a fix ("fix the bug", "make the
   tests pass"), the assistant has changed state since that request, and the result is a test
   runner's summary reporting failures (pytest, unittest, jest, mocha, cargo, go, rspec). Before
   any change, running the tests to see the failure is data, and so is "run the tests";
3b. error *words* ("error", "failed", "exception", "not found", "cannot") count only when the
   request and the call did not ask for such data, they are not inside log lines (``2024-05-01
   12:00 ERROR ...``, ``2024/05/01 12:00:00 [error] ...``, ``[ERROR] ...``, ``level=error``), and they are among the first two words of
   the output's first or last line, or the output is one line of at most 8 words (a request to fix
   something asks for no error data once the assistant changed state for it): a log the user
   asked for, or a ticket titled "Fix error message", is data, not a failure; a JSON result's words
   never count (``{"error": null, ...}``): its fields decide (``ok`` / ``success`` false or
   ``"false"``, a ``status`` of ``fail``, an HTTP ``statusCode``);
4. **pending** (``0``): a status of queued / pending / running / in progress (a JSON ``state`` or
   ``status``, a ``State: PENDING`` line, or the output's opening word), "still running", "not
   ready yet", "in progress", "follow progress at ...", "queued (position 3)", "running...", "you
   will get a link when the file is ready", a status constant such as ``CREATE_IN_PROGRESS`` or
   ``PENDING_VALIDATION``, "Waiting for deployment ... to finish";
5. otherwise ``+1``: the call ran and returned data; an empty result ("(no output)", ``[]``, "no
   results") is what a successful command or an empty search returns.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

__all__ = ["ToolVerdict", "tool_verdict", "calls_since_last_change", "canonical_call", "changed_since_request", "earlier_calls",
           "earlier_results", "overwritten_path"]


@dataclass(frozen=True)
class ToolVerdict:
    """``verdict`` in {1, -1, 0} and the rule that decided it (``reason``)."""

    verdict: int
    reason: str


def _fn(call: Any) -> Mapping:
    if not isinstance(call, Mapping):
        return {}
    fn = call.get("function", call)
    return fn if isinstance(fn, Mapping) else {}


def _args(call: Any) -> Any:
    raw = _fn(call).get("arguments", {})
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except (json.JSONDecodeError, ValueError):
            return raw.strip()
    return raw


def canonical_call(call: Any) -> str:
    """``name(arguments)`` with the arguments as sorted-key JSON (a string that did not parse stays
    as written): two calls are the same call when these strings are equal."""
    return f"{_fn(call).get('name', '?')}({json.dumps(_args(call), sort_keys=True, ensure_ascii=False)})"


def earlier_calls(history: Sequence[Mapping] | None) -> list[Any]:
    """Every tool call of the assistant messages in ``history`` (OpenAI chat messages), in order."""
    out = []
    for m in history or []:
        if isinstance(m, Mapping) and m.get("role") == "assistant":
            out.extend(m.get("tool_calls") or [])
    return out


def earlier_results(history: Sequence[Mapping] | None) -> dict[str, str]:
    """``{canonical call: the text of the tool result that answered it last}`` over ``history``
    (a result is the ``tool`` message with the call's ``tool_call_id``, else the next ``tool``
    message after the call's assistant message)."""
    out: dict[str, str] = {}
    waiting: list[tuple[str, str | None]] = []
    for m in history or []:
        if not isinstance(m, Mapping):
            continue
        if m.get("role") == "assistant":
            waiting = [(canonical_call(c), c.get("id") if isinstance(c, Mapping) else None)
                       for c in m.get("tool_calls") or []]
        elif m.get("role") == "tool" and waiting:
            i = next((k for k, (_, cid) in enumerate(waiting) if cid and cid == m.get("tool_call_id")), 0)
            out[waiting.pop(i)[0]] = _text(m.get("content"))
    return out


def _norm(text: str) -> str:
    return " ".join(_TOOL_MARK.sub("", text).split())


#: a tool whose name says it changes state (files, packages, records): the same read after it may
#: return something new ("pytest -q" again after an edit is progress, not a loop)
_CHANGING_TOOL = re.compile(r"write|save|edit|patch|apply|replace|create|delete|remove|move|rename|update|insert|"
                            r"append|install|commit|upload|put_file|str_replace|restart|reload|deploy|migrat|kill", re.I)
_CHANGING_COMMAND = re.compile(r"(^|[;&|]\s*)(sudo\s+)?(sed -i|perl -pi|patch|git (apply|commit|checkout|reset|merge|pull)|"
                               r"(pip|npm|yarn|pnpm|cargo|apt(-get)?) (install|add|remove|uninstall)|rm|mv|cp|touch|mkdir|"
                               r"systemctl (re)?start|systemctl (reload|stop)|service \S+ (re)?start|docker (compose )?"
                               r"(restart|up|start)|kubectl (apply|rollout restart|delete))\b|>>")


def _changes_state(call: Any) -> bool:
    """Whether ``call`` changes what later calls see: a writing tool (:data:`_CHANGING_TOOL`), a
    shell command writing a file (``>``, ``tee``, ``cp``, ``mv``) or editing / installing."""
    if _CHANGING_TOOL.search(str(_fn(call).get("name", ""))) or _write_targets(call):
        return True
    args = _args(call)
    command = (args.get("command") or args.get("cmd")) if isinstance(args, Mapping) else None
    return isinstance(command, str) and bool(_CHANGING_COMMAND.search(command.strip()))


def calls_since_last_change(history: Sequence[Mapping] | None) -> list[Any]:
    """The tool calls of ``history`` after the last one that changed state (:func:`_changes_state`),
    in order; all of them when none did. A call repeated among these can only return what it
    returned before (module rule 1)."""
    calls = earlier_calls(history)
    last = max((i for i, c in enumerate(calls) if _changes_state(c)), default=-1)
    return calls[last + 1:]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    return "" if content is None else str(content)


_WRITE_TOOL = re.compile(r"write|save|create_file|put_file|overwrite|dump|store_file|upload", re.I)
_PATH_KEYS = ("path", "file", "filename", "file_path", "filepath", "target", "dest", "destination", "output")
#: arguments that hold a program (a Python / notebook tool) and the writes that replace a whole file in it:
#: ``open("f", "w")``, pandas' ``df.to_csv("f")``, ``Path("f").write_text(...)``, ``np.save("f", ...)``
_CODE_KEYS = ("code", "script", "source", "program", "python")
_CODE_WRITE = re.compile(
    r"""\bopen\(\s*(?:r|f)?(?P<q1>['"])(?P<path>[^'"\n]+)(?P=q1)\s*,\s*(?:mode\s*=\s*)?['"][wx]b?\+?['"]|"""
    r"""\.to_(?:csv|json|excel|parquet|pickle|feather|html|markdown|xml|stata|hdf)\(\s*(?:path_or_buf\s*=\s*)?(?P<q2>['"])(?P<path2>[^'"\n]+)(?P=q2)|"""
    r"""\bPath\(\s*(?P<q3>['"])(?P<path3>[^'"\n]+)(?P=q3)\s*\)\.write_(?:text|bytes)\b|"""
    r"""\bnp\.save(?:txt|z)?\(\s*(?P<q4>['"])(?P<path4>[^'"\n]+)(?P=q4)""")


def _write_targets(call: Any) -> list[str]:
    name, args = str(_fn(call).get("name", "")), _args(call)
    targets = []
    if isinstance(args, Mapping) and _WRITE_TOOL.search(name):
        targets += [str(args[k]) for k in _PATH_KEYS if isinstance(args.get(k), str)]
    for key in _CODE_KEYS:
        code = args.get(key) if isinstance(args, Mapping) else None
        if isinstance(code, str):
            targets += [next(g for g in m.group("path", "path2", "path3", "path4") if g)
                        for m in _CODE_WRITE.finditer(code)]
    command = args.get("command") or args.get("cmd") if isinstance(args, Mapping) else None
    if isinstance(command, str):
        targets += re.findall(r"(?<!>)>\s*([^\s;&|>]+)", command)  # "> file", not ">> file"
        try:
            words = shlex.split(command)
        except ValueError:
            words = command.split()
        for i, w in enumerate(words):
            if w == "tee" and i + 1 < len(words) and not words[i + 1].startswith("-"):
                targets.append(words[i + 1])
            if w in ("cp", "mv") and len(words) > i + 2:
                targets.append(words[-1])
            if w in ("sed", "perl"):
                targets += _in_place_files(words[i + 1:])
    return [t for t in targets if t and not t.startswith("/dev/")]


def _in_place_files(words: list[str]) -> list[str]:
    """The files ``sed -i`` / ``perl -pi -e`` edits in place, from the words after the command (up
    to a shell separator); none without an in-place option."""
    out, script_seen, takes_script, in_place = [], False, False, False
    for w in words:
        if w in (";", "&&", "||", "|") or w.endswith(";"):
            break
        if takes_script:
            script_seen, takes_script = True, False
        elif w.startswith("-"):
            in_place = in_place or w == "--in-place" or (w[1:2] != "-" and "i" in w[1:])
            takes_script = w in ("-e", "--expression") or (w[1:2] != "-" and w.endswith("e"))
        elif not script_seen:
            script_seen = True
        else:
            out.append(w)
    return out if in_place else []


_EDIT_VERBS = re.compile(r"\b(writ\w*|sav\w*|overwrit\w*|replac\w*|updat\w*|edit\w*|fix\w*|chang\w*|modif\w*|"
                         r"rewrit\w*|put|append\w*|add\w*|stor\w*|creat\w*|renam\w*|mov\w*|copy|cop\w*|refactor\w*|"
                         r"correct\w*|clean\w*|format\w*|generat\w*|export\w*|produc\w*|dump\w*|output\w*|render\w*|"
                         r"mark\w*|set|insert\w*|remov\w*|delet\w*|drop\w*|strip\w*|bump\w*|increment\w*|"
                         r"(un)?comment\w*|toggl\w*|enabl\w*|disabl\w*|switch\w*|swap\w*|turn\w*|convert\w*|"
                         r"substitut\w*|patch\w*|apply|sort\w*|dedup\w*|lowercas\w*|uppercas\w*|tidy|"
                         r"new file|schreib\w*|erstell\w*|speicher\w*|écri\w*|enregistr\w*|escrib\w*|guard\w*|"
                         r"写|保存|创建|生成)", re.I)
#: advice about a file, not a request to change it: "suggest fixes", "point out changes", "list improvements"
_ADVICE = re.compile(r"\b(suggest|propos|recommend|point out|list|tell me|explain|describe|show me)\w*\s+"
                     r"((some|the|any|possible|a few|what)\s+)?(fix|change|edit|improvement|correction)\w*", re.I)
_OVERWROTE = re.compile(r"\b(overwr(ote|itten|iting)|replaced (the )?existing|existing file (was )?replaced|"
                        r"already exist\w*[^.]*\b(overwr|replac)|"
                        r"(previous|prior|old|original|existing) (file )?(contents?|content|version|data)\b[^.]*\b"
                        r"(replaced|overwritten|discarded|lost|gone))", re.I)
#: a negated verb ("don't change", "do not edit", "never overwrite", "without touching"): not a request to edit
_NEGATED_VERB = re.compile(r"\b(do(n'?t| not)|never|without|no need to)\s+(\w+\s+)?\w+", re.I)
#: the request names a file to leave alone: "keep notes.md as it is", "don't touch config.yaml"
_KEEP_BEFORE = (r"\b(keep|leave|preserve|do(n'?t| not) (touch|change|modify|edit|overwrite|alter)|"
                r"never (touch|change|modify|edit|overwrite)|without (touching|changing|modifying|editing|overwriting))"
                r"\s+(the\s+)?(file\s+|original\s+)?")
_KEEP_AFTER = r"\s+(as it is|as is|unchanged|untouched|alone|intact)\b"


def _kept(base: str, request: str) -> bool:
    """Whether ``request`` asks to leave the file ``base`` as it is (see :data:`_KEEP_BEFORE`)."""
    name = re.escape(base)
    return bool(re.search(_KEEP_BEFORE + r"`?" + name, request, re.I)
                or re.search(name + r"`?" + _KEEP_AFTER, request, re.I))


#: a request to add to a file or to keep what it holds ("add a section", "don't lose my keys")
_ADDS = re.compile(r"\b(add|append|insert|keep (everything|all|the rest)|do(n'?t| not) (lose|delete|remove|drop)|"
                   r"without (losing|removing|deleting|dropping)|whatever is missing)\b", re.I)
#: a write's report that the file got smaller: "14 lines -> 3 lines", "1204 -> 1180 rows",
#: "wrote 49 bytes (previous size 6,118 bytes)"
_SIZE_CHANGE = re.compile(r"(?P<a>\d[\d,]*)\s*(lines?|rows?|bytes?|entries|keys)?\s*(->|→|=>)\s*(?P<b>\d[\d,]*)|"
                          r"\b(?:wrote|written|saved)\s+(?P<b2>\d[\d,]*)\s*bytes?\b.*?\bprevious(?: file)? "
                          r"(?:size|length)\D{0,3}(?P<a2>\d[\d,]*)", re.I | re.S)


def _shrank(next_state: str) -> bool:
    """Whether the result reports that the written file got smaller (:data:`_SIZE_CHANGE`)."""
    for m in _SIZE_CHANGE.finditer(next_state or ""):
        before, after = (m.group("a") or m.group("a2")), (m.group("b") or m.group("b2"))
        if before and after and int(after.replace(",", "")) < int(before.replace(",", "")):
            return True
    return False


def overwritten_path(tool_calls, next_state: str, request: str | None,
                     history: Sequence[Mapping] | None) -> str | None:
    """The path a call of this turn overwrote without being asked to, or None (module rule 2).
    A file the request asked to add to (or to keep what it holds) that the result reports smaller
    afterwards counts too: the write replaced what it was asked to keep."""
    earlier = " ".join(_text(m.get("content")) + " " + json.dumps(m.get("tool_calls") or [], ensure_ascii=False)
                       for m in history or [] if isinstance(m, Mapping))
    asked = request or ""
    # "don't change it" and "suggest fixes" ask for no edit
    wants_edit = bool(_EDIT_VERBS.search(_ADVICE.sub(" ", _NEGATED_VERB.sub(" ", asked))))
    for call in tool_calls or []:
        for path in _write_targets(call):
            base = path.rstrip("/").rsplit("/", 1)[-1]
            existed = bool(base) and (base in earlier or base in asked or bool(_OVERWROTE.search(next_state or "")))
            requested = base in asked and wants_edit and not _kept(base, asked)
            lost = requested and bool(_ADDS.search(asked)) and _shrank(next_state)
            if existed and (not requested or lost):
                return path
    return None


# -------------------------------------------------------------------------------- error structure
_LOG_LINE = re.compile(r"^\s*(\[?\d{4}[-/.]\d\d[-/.]\d\d|\[?\d\d:\d\d:\d\d|[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d\b|\[?(info|warn|warning|error|err|debug|trace|fatal|"
                       r"critical|notice)\]|.*\blevel=(error|warn|warning|info|debug))", re.I)
#: what the environment says when the call itself could not run: the shell, the OS, an access check.
#: Always a failure, whatever the call searched for.
_SHELL_LINE = re.compile(
    r"command not found|no such file or directory|permission denied|operation not permitted|access denied|"
    r"authentication (failure|failed)|pam_authenticate failed|^\S*sh: (\d+: )?.*not found\s*$|"
    r"is not recognized as an internal or external|"
    # the shell's own messages as localised builds print them (bash / coreutils gettext catalogues) and
    # Windows cmd's "is not recognized as an internal or external command" in German, French, Spanish, Chinese
    r"befehl nicht gefunden|keine berechtigung|datei oder verzeichnis nicht gefunden|commande introuvable|"
    r"permission non accordée|aucun fichier ou dossier de ce type|orden no encontrada|comando no encontrado|"
    r"permiso denegado|no existe el archivo o el directorio|未找到命令|权限不够|没有那个文件或目录|"
    r"ist entweder falsch geschrieben oder|n'est pas reconnu en tant que commande|"
    r"no se reconoce como un comando interno|不是内部或外部命令|拒绝访问|zugriff verweigert|accès refusé|acceso denegado",
    re.I)
#: what a program prints when it fails: a traceback, an ``XxxError:`` line, a stack frame, a crash.
#: A failure, unless the call itself searched for such text (``grep Traceback app.log``): then it is data.
_HARD_LINE = re.compile(
    r"traceback \(most recent call last\)|^\s*(\w+\.)*\w*(error|exception)\b: |"
    r"segmentation fault|core dumped|connection refused|"
    r"^\s*(fatal|error|err!|npm err!)\s*: |^E: |^\s*panic: |cannot find module"
    r"|unknown (tool|function|command)\b|missing (required )?(argument|parameter)|"
    r"unexpected keyword argument|invalid (argument|parameter|syntax|json|value|input)|"
    # a JavaScript / Node stack: "    at Module._load (node:internal/modules/cjs/loader:1080:15)"
    r"^\s+at \S.*\(?(node:|file:|/|[a-z]:\\)\S*:\d+:\d+\)?\s*$|^node:internal/|"
    # Ruby ("app.rb:3:in `divide': divided by 0 (ZeroDivisionError)", "from app.rb:7:in `<main>'"),
    # Elixir ("** (ArithmeticError) bad argument") and PowerShell ("+ CategoryInfo : ...", "At line:1
    # char:1", PowerShell 7's "Get-Item: Cannot find path ...")
    r"\((\w+::)*\w*(error|exception)\)\s*$|^\s*(from )?\S+\.rb:\d+:in [`']|^\*\* \([A-Z]\w*(\.\w+)*\) |"
    r"^\s*\+ (CategoryInfo|FullyQualifiedErrorId)\s*: |^At line:\d+ char:\d+|"
    r"(?-i:^(Get|New|Remove|Invoke|Start|Stop|Copy|Move|Import|Test|Resolve|Join|Convert\w*)-[A-Z]\w+ ?: )", re.I)
_EXIT = re.compile(r"\b(?:exit(?:ed)?(?: with)?(?:[ _-]?code| status)?|return ?code|returncode|exit_code|exitcode|"
                   r"code de (?:sortie|retour)|c[oó]digo de (?:salida|retorno)|r[üu]ckgabe(?:wert|code)|exit-?status|"
                   r"退出(?:码|代码|状态))[\"' :=：]*(?P<code>-?\d+)\b|non-zero exit status (?P<status>\d+)|"
                   r"\[exit (?P<bracket>\d+)\]", re.I)
_HTTP = re.compile(r"\bhttp/\d(\.\d)? ([45]\d\d)\b|\b([45]\d\d) (not found|bad request|unauthori[sz]ed|forbidden|"
                   r"internal server error|service unavailable|bad gateway|too many requests|gateway time-?out|"
                   r"conflict|unprocessable entity|method not allowed|payload too large)\b|\bstatus[\"' :=]+([45]\d\d)\b",
                   re.I)
_TIMEOUT = re.compile(r"\b(timed out|timeout (error|exceeded|expired)|deadline exceeded|killed \(oom\)|out of memory)\b",
                      re.I)
_SOFT = re.compile(r"\b(error|errors|exception|failed|failure|fatal|not found|unable to|cannot|could not)\b", re.I)
_NO_ERRORS = re.compile(r"\b(0|no|zero|without) (errors?|failures?|failed|exceptions?)\b", re.I)
_ASKS_ERRORS = re.compile(r"\b(errors?|fail\w*|exceptions?|warn\w*|log|logs|traceback|stack ?traces?|crash\w*|incidents?|bugs?|"
                          r"issues?)\b", re.I)
#: a request to fix something: after the assistant changed state for it, failures are the fix's
_ASKS_FIX = re.compile(r"\b(fix(es|ed|ing)?|repair\w*|resolve|solve|patch|make (it|them|this|the \w+( \w+)?) (pass|work)|"
                       r"get (it|them|this|the \w+( \w+)?) (to )?(pass|work(ing)?))\b", re.I)
#: a test runner's summary reporting failures (pytest, unittest, jest, mocha, cargo, go, rspec)
_TEST_FAILURES = re.compile(
    r"^=+ (.*, )?[1-9]\d* (failed|errors?)\b.* in [\d.]+s|^FAILED \S+::|^FAILED \((failures|errors)=[1-9]|"
    r"^Tests:\s+[1-9]\d* failed\b|^\s*[1-9]\d* failing\b|^test result: FAILED\b|^--- FAIL: |^FAIL\s+\S|"
    r"^\d+ examples?, [1-9]\d* failures?\b", re.I | re.M)
_PENDING = re.compile(
    r"\b(state|status)\"?\s*[:=]\s*\"?(queued|pending|running|in[_ ]progress|scheduled|processing|starting|waiting\w*)\b|"
    r"^\s*(queued|pending|scheduled)\b|^\s*running\b(?! \d+ tests?\b)|\b(has been|is|was) (queued|scheduled)\b|\bin progress\b|"
    r"\b(queued|running|processing)\b( \(|\.\.\.|…)|\b(still (running|processing|pending|being \w+)|"
    r"not (yet )?(ready|finished|complete))\b|\b(when|once) (it|the \w+( \w+)?) (is|has) (ready|done|finished|complete|"
    r"completed)\b|\b(follow|track|watch) (its |the )?(progress|status)\b|"
    # status constants ("CREATE_IN_PROGRESS", "PENDING_VALIDATION") and rollout waits
    r"(?-i:\b[A-Z]+(_[A-Z]+)*_(IN_PROGRESS|PENDING)(_[A-Z]+)*\b|\bPENDING_[A-Z_]+\b)|"
    r"\bwaiting for .{1,80}\bto (finish|complete|become ready)\b", re.I)
_TOOL_MARK = re.compile(r"^\s*\[tool[^\]\n]*\]\s*", re.I)
#: a call that reads or searches text for errors (``grep -A4 Traceback``, ``tail logs/error.log``,
#: ``docker logs api | grep ERROR``): what it prints is what it looked for, not what it did
_SEARCH_VERB = re.compile(r"\b(grep|egrep|zgrep|rg|ag|ack|findstr|select-string|search|tail|head|cat|zcat|less|"
                          r"journalctl|logs|query)\b", re.I)
_SEARCHED_ERRORS = re.compile(r"\b(errors?|exceptions?|traceback|fail\w*|fatal|panic\w*|crash\w*|warn\w*)\b", re.I)


def changed_since_request(history: Sequence[Mapping] | None) -> bool:
    """Whether the assistant made a state-changing call (:func:`_changes_state`) after the user's
    last message in ``history``: what it runs next checks its own change."""
    messages = [m for m in history or [] if isinstance(m, Mapping)]
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    return any(_changes_state(c) for m in messages[last_user + 1:] if m.get("role") == "assistant"
               for c in m.get("tool_calls") or [])


def _parse_json(text: str) -> Any:
    """The JSON object or array ``text`` holds, else None (plain output)."""
    try:
        obj = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return None
    return obj if isinstance(obj, (Mapping, list)) else None


def _json_error(obj: Any, asked_for_errors: bool = False) -> str | None:
    if not isinstance(obj, Mapping):
        return None
    low = {str(k).lower(): v for k, v in obj.items()}
    if (low.get("error") or low.get("errors") or low.get("exception")) and not asked_for_errors:
        return "JSON error field"  # an error record the user asked for (an issue tracker's event) is data
    if any(low.get(k) is False or str(low.get(k)).lower() == "false" for k in ("ok", "success")):
        return "JSON ok/success false"
    http_keys = ("status_code", "statuscode", "code", "status", "http_status", "httpstatus")
    for key in ("exit_code", "exitcode", "returncode", "return_code", *http_keys):
        v = low.get(key)
        if isinstance(v, int) and not isinstance(v, bool):
            if key in http_keys and 400 <= v <= 599:
                return f"HTTP status {v}"
            if key not in http_keys and v != 0:
                return f"exit code {v}"
        if isinstance(v, str) and v.lower() in ("error", "failed", "failure", "fail"):
            return f"{key}: {v}"
    return None


def _structural_error(text: str, asked_for_errors: bool, call_searches_errors: bool = False) -> str | None:
    """Why ``text`` (a tool result) reads as a failure, or None.

    ``asked_for_errors``: the request or the call asks for errors or logs (error words are data).
    ``call_searches_errors``: the call's own arguments search for error text (``grep Traceback``):
    the tracebacks and ``XxxError:`` lines it prints are what it looked for; what the shell says
    about the call itself (no such file, permission denied) still fails it.
    """
    parsed = _parse_json(text.strip())
    reason = _json_error(parsed, asked_for_errors)
    if reason:
        return reason
    lines = [ln for ln in text.splitlines() if ln.strip()]
    data_lines = [ln for ln in lines if not _LOG_LINE.match(ln)]
    # an exit code or an HTTP status inside a log line the call read is data, as any log line is
    data = "\n".join(data_lines)
    for m in _EXIT.finditer(data):
        code = m.group("code") or m.group("status") or m.group("bracket")
        if code is not None and int(code) != 0:
            return f"exit code {code}"
    m = _HTTP.search(data)
    if m:
        return "HTTP error status"
    for ln in data_lines[:3] + data_lines[-3:]:  # errors open or close an output; deep inside it is data
        hit = _SHELL_LINE.search(ln) or (None if call_searches_errors else _HARD_LINE.search(ln))
        if hit:
            return hit.group(0).strip()
    if any(_TIMEOUT.search(ln) for ln in data_lines):  # a timeout in a log line the call read is data
        return "timeout"
    # an error word in the first two words of the first / last line, or a short output; a JSON
    # result's words are data ({"error": null, ...}): its structure decided above
    if not asked_for_errors and parsed is None:
        short = len(data_lines) == 1 and len(data_lines[0].split()) <= 8
        for ln in data_lines[:1] + data_lines[-1:]:
            hit = _SOFT.search(ln)
            if hit and (short or len(ln[:hit.start()].split()) <= 1) and not _NO_ERRORS.search(ln):
                return hit.group(0)
    return None


def tool_verdict(next_state: str | None, tool_calls=None, request: str | None = None,
                 history: Sequence[Mapping] | None = None, role: str | None = "tool") -> ToolVerdict | None:
    """The structural verdict of a tool-call turn (module docstring), or None when no rule applies
    (a user next state after a turn without a repeated call or an overwrite).

    Args:
        next_state: the tool result (or the user's reply). tool_calls: this turn's calls (OpenAI
            form). request: the user's last message. history: the prompt messages before the
            turn (OpenAI form; earlier calls and mentioned files are read from it).
        role: ``"tool"`` when ``next_state`` is a tool result; otherwise only rules 1-2 apply.
    """
    before = {canonical_call(c) for c in calls_since_last_change(history)}
    results = earlier_results(history)
    for call in tool_calls or []:
        key = canonical_call(call)
        if key in before and not (role == "tool" and results.get(key) is not None
                                  and _norm(results[key]) != _norm(next_state or "")):
            return ToolVerdict(-1, f"repeated tool call {key[:120]}")
    path = overwritten_path(tool_calls, next_state or "", request, history)
    if path:
        return ToolVerdict(-1, f"overwrote an existing file the user did not ask to change: {path}")
    if role != "tool":
        return None
    text = _TOOL_MARK.sub("", next_state or "")
    call_args = " ".join(json.dumps(_args(c), ensure_ascii=False) for c in tool_calls or [])
    checking_a_fix = bool(_ASKS_FIX.search(request or "")) and changed_since_request(history)
    if checking_a_fix and _TEST_FAILURES.search(text):
        return ToolVerdict(-1, "tool error: tests still fail after the change")
    # "fix the bug" asks for a fix, not for error data: once the assistant changed something, the
    # errors its check prints are the fix's (the call's own arguments may still ask: grep ERROR)
    call_searches = bool(_SEARCH_VERB.search(call_args)) and bool(_SEARCHED_ERRORS.search(call_args))
    asked = bool(_ASKS_ERRORS.search(call_args)) or (bool(_ASKS_ERRORS.search(request or "")) and not checking_a_fix)
    reason = _structural_error(text, asked, call_searches)
    if reason:
        return ToolVerdict(-1, f"tool error: {reason}")
    if _PENDING.search(text):
        return ToolVerdict(0, "pending result")
    return ToolVerdict(1, "tool returned a result" if text.strip() else "tool ran, empty result")
