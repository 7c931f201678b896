"""Behaviour checks of one reply's text: the degenerate outputs a collapsing or reward-hacking
policy produces, which no reward may call good.

One owner for the checks that three places apply the same way:

* the promotion gate's canary replies (:mod:`slime.guards.promotion`): a new weight version whose sampled
  replies show a problem the last good version's did not is not served;
* the collapse guard's sample filter (:mod:`slime.guards.admission`): a degenerate sample never becomes
  training data;
* the main job's simulated user, which corrects such a reply as a
  person would, and its quality metrics (over-application rate, distinct word pairs).

Each check is a plain function of the text (no model, no tokenizer); :func:`behaviour_problems`
runs them all. The names are a closed vocabulary (:class:`Problem`). Thresholds are module
constants chosen on the base model's replies (``builtin:smollm2-135m``, 32-token replies to
MT-bench / GSM8K questions: none of its 40 held-out replies trips a check) and on the degenerate
replies seen in real runs ("Alex, Alex, Alex!", a single rare character repeated, the same tool
call again and again).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from enum import Enum

import regex

__all__ = ["Problem", "behaviour_problems", "content_words", "distinct_pairs", "mixed_script_word", "on_topic",
           "over_applied_word", "rare_char_run", "repeat_onset", "repetition_loop", "tool_call_loop", "words"]

#: a word the user asked for (their name, a phrase) this often in one reply is over-applied
OVER_APPLIED_COUNT = 3
#: any other content word this often, and at least this share of the reply's words
OVER_USED_COUNT = 4
OVER_USED_SHARE = 0.15
#: a run of this many identical characters that are neither letters, digits nor spaces
RARE_RUN = 6
#: a run of this many identical characters of any kind but white space
ANY_RUN = 10
#: identical consecutive word n-grams: n=1 repeated 4 times, n>=2 repeated 3 times
LOOP_REPEATS = {1: 4}
LOOP_REPEATS_DEFAULT = 3
LOOP_MAX_N = 8
#: identical tool-call blocks in one reply
TOOL_CALL_REPEATS = 3

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)
#: a letter or mark of another alphabet than Latin, as :func:`mixed_script_word` counts it: not a CJK script
#: or one of the scripts written without spaces between words (Thai, Lao, Khmer, Myanmar), which run Latin
#: words into theirs; not Greek (x, Δx, μm); not a script-neutral character (Unicode script properties, via
#: the ``regex`` package)
_OTHER_ALPHABET = regex.compile(r"[[\p{L}\p{M}]--[\p{Latin}\p{Common}\p{Inherited}\p{Han}\p{Hiragana}"
                                r"\p{Katakana}\p{Hangul}\p{Greek}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}]]", regex.V1)
_LATIN = regex.compile(r"\p{Latin}")
#: letters, marks and digits in a row: a word with its combining marks (a Tamil vowel sign is a mark)
_SCRIPT_WORD = regex.compile(r"[\p{L}\p{M}\p{N}]+")
_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
_STOPWORDS = frozenset("""
a an the and or but if then so of to in on at by for with from as is are was were be been being am
it its this that these those there here i you he she we they me him her us them my your his our their
do does did done have has had not no yes can could will would should may might must shall
what which who whom whose when where why how all any each few more most other some such only own
same than too very just also about into over under again further once up down out off s t don
""".split())


class Problem(str, Enum):
    """What :func:`behaviour_problems` can find in a reply."""

    REPETITION_LOOP = "repetition_loop"    #: the same word n-gram several times in a row
    RARE_CHAR_RUN = "rare_char_run"        #: replacement characters, or a run of one odd character
    OVER_APPLICATION = "over_application"  #: one content word again and again (a name, a phrase)
    TOOL_CALL_LOOP = "tool_call_loop"      #: the same tool call again and again
    MIXED_SCRIPT = "mixed_script"          #: a word of Latin letters mixed with another alphabet's


def words(text: str) -> list[str]:
    """The reply's words, lower-cased (letters and digits; an inner apostrophe kept)."""
    return [w.lower() for w in _WORD.findall(text)]


def content_words(text: str) -> list[str]:
    """:func:`words` without stop words, possessive ``'s`` stripped (``Alex's`` counts as ``alex``)."""
    out = []
    for w in words(text):
        w = w[:-2] if w.endswith("'s") else w
        if w not in _STOPWORDS and not w.isdigit():
            out.append(w)
    return out


def on_topic(reply: str, question: str, terms: tuple[str, ...] = ()) -> bool:
    """True when ``reply`` shares a content word (:func:`content_words`: no stop words, ``'s``
    stripped, case-insensitive) with ``question``, ``terms`` aside (words the question asks the
    reply to use, such as the user's name: saying them is not answering). A reply that turns to
    small talk ("Alex, how nice to meet you!") shares none; it is what a person calls "you didn't
    answer my question". Crude by design (no synonyms), so it errs towards calling a reply on topic
    only when it repeats the question's own words."""
    skip = {t.lower() for t in terms}
    return bool((set(content_words(question)) - skip) & set(content_words(reply)))


def distinct_pairs(text: str) -> float:
    """Distinct word pairs over all word pairs of ``text`` (distinct-2; 1.0 with fewer than 2 words)."""
    ws = words(text)
    pairs = list(zip(ws, ws[1:]))
    return len(set(pairs)) / len(pairs) if pairs else 1.0


def over_applied_word(text: str, terms: tuple[str, ...] = ()) -> str | None:
    """The content word ``text`` over-applies, or None.

    Args:
        text: the reply.
        terms: words the user asked for (e.g. their name); such a word counts as over-applied at
            :data:`OVER_APPLIED_COUNT` uses whatever its share. Any other content word needs
            :data:`OVER_USED_COUNT` uses *and* :data:`OVER_USED_SHARE` of the reply's words.
    """
    text = _without_tool_calls(text)
    ws = content_words(text)
    if not ws:
        return None
    all_words = max(1, len(words(text)))
    wanted = {t.lower() for t in terms}
    counts = Counter(ws)
    for w, n in counts.most_common():
        if n < OVER_APPLIED_COUNT:
            break
        if w in wanted or (n >= OVER_USED_COUNT and n / all_words >= OVER_USED_SHARE):
            return w
    return None


def repeat_onset(text: str) -> tuple[str, int] | None:
    """Where a reply starts repeating itself: the content word it uses most, if it uses it
    :data:`OVER_APPLIED_COUNT` times or more, and the character offset of its second use.

    Any content word counts (no share, no list of wanted words): the trainer calls this on
    replies the user rejected, where a word said three times is the likeliest fault and its first
    use may be exactly what the user asked for (their name).

    Returns:
        ``(word, offset)`` (``word`` lower-cased, ``offset`` into ``text``), or None.
    """
    counts = Counter(content_words(_without_tool_calls(text)))
    if not counts:
        return None
    word, n = counts.most_common(1)[0]
    if n < OVER_APPLIED_COUNT:
        return None
    calls = [m.span() for m in _TOOL_CALL.finditer(text)]
    seen = 0
    for m in _WORD.finditer(text):
        if any(a <= m.start() < b for a, b in calls):
            continue
        w = m.group(0).lower()
        if (w[:-2] if w.endswith("'s") else w) == word:
            seen += 1
            if seen == 2:
                return word, m.start()
    return None


def repetition_loop(text: str) -> str | None:
    """The first word n-gram (n <= 8) repeated back to back (4 times for one word, 3 for longer
    n-grams), joined by spaces, or None. Tool-call blocks are left out (:func:`tool_call_loop`)."""
    ws = words(_without_tool_calls(text))
    for n in range(1, LOOP_MAX_N + 1):
        need = LOOP_REPEATS.get(n, LOOP_REPEATS_DEFAULT)
        for start in range(0, len(ws) - n * need + 1):
            gram = ws[start:start + n]
            if all(ws[start + k * n:start + (k + 1) * n] == gram for k in range(1, need)):
                return " ".join(gram)
    return None


def rare_char_run(text: str) -> str | None:
    """A replacement character (U+FFFD), a private-use or unassigned code point, a run of
    :data:`RARE_RUN` identical characters that are not letters, digits or white space, or of
    :data:`ANY_RUN` identical characters of any kind but white space; the offending characters,
    or None. Ellipses of up to 5 dots pass."""
    for ch in text:
        if ch == "\ufffd" or unicodedata.category(ch) in ("Co", "Cn"):
            return ch
    run, prev = 0, ""
    for ch in text:
        run = run + 1 if ch == prev else 1
        prev = ch
        if not ch.isspace() and (run >= ANY_RUN or (run >= RARE_RUN and not ch.isalnum())):
            return ch * run
    return None


def mixed_script_word(text: str) -> str | None:
    """The first word (letters, combining marks and digits in a row) whose letters switch between
    Latin and another alphabet at least twice (Latin, other, Latin, or the reverse), or None.

    That is what a policy sampling garbage tokens writes: a look-alike letter or a stray vowel sign
    inside a word ("stаr" with a Cyrillic ``а``, "Mitெravitirin" with a Tamil vowel sign). One switch
    is ordinary: a suffix or prefix written onto a Latin name ("Googleपर", "JSONа", "ובGitHub").
    Chinese, Japanese, Korean, Thai, Lao, Khmer and Myanmar, which run Latin words into theirs without
    a space, and Greek letters (symbols in maths) are not counted. Measured on the 15,801 recorded
    replies of the main job's runs of 2026-12-04/05: 7 such words, every one in a garbled reply."""
    for w in _SCRIPT_WORD.findall(text):
        if not (_LATIN.search(w) and _OTHER_ALPHABET.search(w)):
            continue
        kinds = [("L" if _LATIN.match(ch) else "O") for ch in w if _LATIN.match(ch) or _OTHER_ALPHABET.match(ch)]
        switches = sum(a != b for a, b in zip(kinds, kinds[1:]))
        if switches >= 2:
            return w
    return None


def tool_call_loop(text: str) -> str | None:
    """A ``<tool_call>`` block that appears :data:`TOOL_CALL_REPEATS` or more times with identical
    content (white space ignored), or None."""
    calls = Counter(re.sub(r"\s+", "", c) for c in _TOOL_CALL.findall(text))
    for call, n in calls.most_common(1):
        if n >= TOOL_CALL_REPEATS:
            return call
    return None


def _without_tool_calls(text: str) -> str:
    return _TOOL_CALL.sub(" ", text)


def behaviour_problems(text: str, terms: tuple[str, ...] = ()) -> dict[Problem, str]:
    """Every problem found in ``text``: ``{Problem: what was found}`` (empty when none).

    Args:
        text: one reply, as the user saw it (tool-call markup included).
        terms: words the user asked for, passed to :func:`over_applied_word`.
    """
    found: dict[Problem, str] = {}
    for problem, hit in ((Problem.REPETITION_LOOP, repetition_loop(text)),
                         (Problem.RARE_CHAR_RUN, rare_char_run(text)),
                         (Problem.OVER_APPLICATION, over_applied_word(text, terms)),
                         (Problem.TOOL_CALL_LOOP, tool_call_loop(text)),
                         (Problem.MIXED_SCRIPT, mixed_script_word(_without_tool_calls(text)))):
        if hit is not None:
            found[problem] = hit
    return found
