"""A generated, labelled corpus of user next states for training the ``classifier`` PRM mode.

Every example is one judged turn as the classifier reads it: the user's request, the assistant's
reply and the user's next message, with the verdict a careful person would give (``1`` the reply
was accepted, ``-1`` it was corrected or rejected, ``0`` the next message says nothing about it).
Examples are made from templates x slot values x languages x writing styles:

* **languages**: English, German, Spanish, French, Chinese (``en de es fr zh``);
* **verdict styles** (``style`` field): for ``-1`` explicit corrections, corrections with no
  negative word (a bare requirement "3 bullet points.", a stated fact "The confirmation says
  March 14.", "Close, but in TypeScript"), terse replies ("again.", "?", "wrong file"), sarcasm,
  negated praise, polite redo requests ("thanks, but shorter please"), mixed praise and
  correction, the request repeated, the user pasting their own fixed version; for ``1`` thanks,
  acceptance without praise (the user builds on the answer, reports it worked, also in the words of
  the error that is gone: "no more 404", "Plus de plantage"), emoji; for ``0``
  a new unrelated question, "brb", background notifications, a new file for a new task,
  questions about the answer;
* **surface noise** (deterministic, seeded): lower case, dropped final punctuation, one typo,
  an emoji, a filler word.

Templates are grouped in families (``family`` field, e.g. ``en:-1:fact:3``): the held-back slice
(:func:`split`) holds whole families out, so it measures wording the classifier never saw, not
the same sentence with another slot value. The corpus is fully determined by the code and
``seed``: :func:`generate` returns the same list on every machine.

The templates, slot values and turns are in :mod:`.feedback_templates`; this module makes the
corpus from them. Licence: the templates and slot values were written for this project and are released with it
under Apache-2.0 (``openclaw_rl/judges/data/LICENSE-feedback-corpus``).

    python -m openclaw_rl.judges.feedback_corpus --out corpus.jsonl   # write it as judge cases
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from dataclasses import dataclass

from openclaw_rl.judges.feedback_templates import EMOJI, FILLER, LANGUAGES, SLOTS, TEMPLATES, TURNS

__all__ = ["CorpusExample", "generate", "split", "LANGUAGES", "corpus_fingerprint", "main"]


@dataclass(frozen=True)
class CorpusExample:
    """One labelled next state: ``request``, ``response``, ``next_state`` (user role), ``label``
    (1 / -1 / 0), ``lang``, ``style`` and the template ``family`` it came from."""

    request: str
    response: str
    next_state: str
    label: int
    lang: str
    style: str
    family: str


def _fill(template: str, lang: str, rng: random.Random, request: str, response: str) -> str:
    out = template
    for slot, values in SLOTS.items():
        token = "{" + slot + "}"
        while token in out:
            out = out.replace(token, rng.choice(values.get(lang) or values["en"]), 1)
    if "{paste}" in out:  # the user's own fixed version: the reply with one line edited
        lines = response.splitlines() or [response]
        i = rng.randrange(len(lines))
        lines[i] = lines[i].replace("xs[::-1]", "list(reversed(xs))").replace("9:40", "10:40") + " # fixed"
        out = out.replace("{paste}", "\n".join(lines))
    return out.replace("{repeat}", request.rstrip("?？"))


def _typo(text: str, rng: random.Random) -> str:
    idx = [i for i, c in enumerate(text) if c.isalpha()]
    if len(idx) < 4:
        return text
    i = rng.choice(idx[1:-1])
    return text[:i] + text[i + 1] + text[i] + text[i + 2:] if rng.random() < 0.5 else text[:i] + text[i + 1:]


def _noise(text: str, lang: str, rng: random.Random) -> str:
    """One deterministic surface variant: lower case, no final punctuation, a typo, emoji, filler."""
    if "\n" in text:  # pasted code stays as written
        return text
    r = rng.random()
    if r < 0.2:
        text = text.lower()
    elif r < 0.35:
        text = text.rstrip(".!。！")
    elif r < 0.5:
        text = _typo(text, rng)
    elif r < 0.6:
        text = f"{text} {rng.choice(EMOJI)}"
    elif r < 0.7 and len(text) > 6:
        text = rng.choice(FILLER[lang]) + text[0].lower() + text[1:]
    return text


def generate(seed: int = 0, per_template: int = 4) -> list[CorpusExample]:
    """The whole corpus, deterministic for a given ``seed``.

    Args:
        seed: seeds slot choice and surface noise. per_template: variants made from each template
            (slot values and noise differ; exact duplicates are dropped).

    Returns:
        Examples in a fixed order (language, verdict, style, template, variant).
    """
    out, seen = [], set()
    for lang in LANGUAGES:
        for label, styles in TEMPLATES[lang].items():
            for style, templates in styles.items():
                for k, template in enumerate(templates):
                    family = f"{lang}:{label}:{style}:{k}"
                    rng = random.Random(f"{seed}:{family}")
                    for _ in range(per_template):
                        request, response = rng.choice(TURNS[lang])
                        text = _noise(_fill(template, lang, rng, request, response), lang, rng)
                        if (text, request) in seen:
                            continue
                        seen.add((text, request))
                        out.append(CorpusExample(request, response, text, label, lang, style, family))
    return out


def _held_back(family: str, seed: int, fraction: float) -> bool:
    digest = hashlib.sha256(f"heldback:{seed}:{family}".encode()).digest()
    return digest[0] / 256.0 < fraction


def split(examples: list[CorpusExample], fraction: float = 0.2, seed: int = 0
          ) -> tuple[list[CorpusExample], list[CorpusExample]]:
    """``(train, held_back)``: whole template families go to the held-back slice with probability
    ``fraction`` (a hash of the family name, so the split does not depend on the order or the
    other families). The held-back slice is for measuring only, never for tuning."""
    train, held = [], []
    for ex in examples:
        (held if _held_back(ex.family, seed, fraction) else train).append(ex)
    return train, held


def corpus_fingerprint(seed: int = 0, per_template: int = 4) -> str:
    """A short hash of the generated corpus (the classifier's cache key changes with it)."""
    h = hashlib.sha256()
    for ex in generate(seed, per_template):
        h.update(f"{ex.label}\x00{ex.request}\x00{ex.next_state}\x00{ex.family}\n".encode())
    return h.hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    """Write the corpus (or its held-back slice) as a judge case file (``openclaw-rl judge-eval --cases``)."""
    p = argparse.ArgumentParser(prog="python -m openclaw_rl.judges.feedback_corpus", description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="JSONL file to write")
    p.add_argument("--part", choices=("all", "train", "heldback"), default="all")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    examples = generate(a.seed)
    if a.part != "all":
        train, held = split(examples, seed=a.seed)
        examples = train if a.part == "train" else held
    with open(a.out, "w", encoding="utf-8") as fh:
        for i, ex in enumerate(examples):
            fh.write(json.dumps({"name": f"gen{i}:{ex.family}", "request": ex.request, "response": ex.response,
                                 "next_state": ex.next_state, "role": "user", "expected": ex.label,
                                 "tags": ["generated", f"lang:{ex.lang}", ex.style]}, ensure_ascii=False) + "\n")
    print(f"wrote {len(examples)} examples to {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
