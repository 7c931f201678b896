"""Does what the main job learned carry over, and does it stay a thing a person wants?

An independent check of a trained checkpoint, apart from the main job's own held-out questions
(MT-bench and GSM8K): :data:`EVERYDAY` questions of another kind, each asked with the preference
stated as in training, paraphrased (:attr:`openclaw_rl.preferences.Preference.paraphrase`, never
seen in training) and not stated at all, to the base model and to the checkpoint, each on a fresh
server, with the same seeds. Per model and condition: how often the preference holds (Wilson
interval), and the quality a person notices (:func:`openclaw_rl.main_job.quality.quality_summary`:
the preference's word three or more times, its share of all words, distinct word pairs, length).

A preference that generalises holds more often when stated or paraphrased and does not leak into
replies where it was not asked for; a hacked one shows as over-application ("Alex, Alex, Alex!")
or lost diversity. Run::

    python -m openclaw_rl.main_job.generalisation --checkpoint <run>/ckpt [--preference name-alex]

It prints one table and writes ``generalisation.json`` next to the checkpoint's run folder (or
``--out``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from openclaw_rl.interrupt import SIGTERM_EXIT, Terminated, sigterm_unwinds
from openclaw_rl.main_job.questions import Question
from openclaw_rl.preferences import DEFAULT_PREFERENCE, PREFERENCES, Preference, get_preference

__all__ = ["CONDITIONS", "EVERYDAY", "check", "conditions", "main"]

#: everyday questions unlike the main job's (no benchmark, no word problem), asked in every condition
EVERYDAY = tuple(Question(f"everyday-{i}", text, "everyday") for i, text in enumerate((
    "How do I get a red wine stain out of a carpet?",
    "What should I pack for a weekend hiking trip?",
    "Can you suggest a quick vegetarian dinner?",
    "How often should I water a cactus?",
    "What's a good way to start learning the guitar?",
    "How do I politely decline a wedding invitation?",
    "Why does my bread come out dense?",
    "What are some tips for sleeping better?",
    "How can I make my phone battery last longer?",
    "What's the difference between a latte and a cappuccino?",
    "How do I ask my manager for a raise?",
    "What can I do on a rainy Sunday with kids?",
    "How should I prepare for a job interview?",
    "Is it better to rent or buy a car?",
    "How do I clean a cast iron pan?",
    "What's a nice gift for a friend who likes books?",
    "How long should I boil an egg for a soft yolk?",
    "How do I stop procrastinating?",
    "What should I look for when buying running shoes?",
    "How can I save money on groceries?",
    "What's an easy houseplant for a dark room?",
    "How do I write a thank-you note to a teacher?",
    "Why is the sky blue?",
    "How do I keep cut flowers fresh longer?",
    "What are good stretches after sitting all day?",
    "How do I back up photos from my phone?",
    "What's a fun game for a group of adults?",
    "How do I remove a splinter safely?",
    "What should I know before adopting a cat?",
    "How can I improve my handwriting?",
    "What's a good routine for a lazy morning?",
    "How do I fix a squeaky door?",
    "How can I be more confident speaking in meetings?",
    "What's the best way to learn new vocabulary?",
    "How do I make cold brew coffee at home?",
    "What should I do if I lock myself out of my house?",
    "How do I choose a good watermelon?",
    "What's a simple way to start journaling?",
    "How do I tell a friend they hurt my feelings?",
    "What can I cook with leftover rice?",
)))

#: the three ways the preference is (not) asked for
CONDITIONS = ("stated", "paraphrased", "not_stated")


def conditions(preference: Preference) -> dict[str, Preference]:
    """``{condition: the preference with that condition's instruction}`` (the check is the same;
    ``not_stated`` has no instruction, so its rate is how often the behaviour leaks)."""
    return {"stated": preference,
            "paraphrased": dataclasses.replace(preference, instruction=preference.paraphrase or preference.instruction),
            "not_stated": dataclasses.replace(preference, instruction="")}


def check(model: str, preference: Preference, *, base_model: str | None = None, max_tokens: int = 48,
          seed: int = 5000, questions: Sequence[Question] = EVERYDAY, workdir: Path | None = None) -> dict:
    """Serve ``model`` on a fresh server and ask ``questions`` (:data:`EVERYDAY`) in each of
    :data:`CONDITIONS`.

    Args:
        model: a ``--model-path`` value (``builtin:`` name, model folder, LoRA checkpoint or a
            run's ``ckpt`` folder). preference: the preference to check.
        base_model: the base of a LoRA checkpoint (when its adapter config does not name one).
        max_tokens: reply budget. seed: question ``i`` is sampled with ``seed + i`` (T=1).
        workdir: where the server's buffer and log go (a temporary folder by default).

    Returns:
        ``{condition: {"rate", "ci95", "quality", "replies"}}``.

    Raises:
        ValueError: ``model`` is no model. RuntimeError: the server did not start.
    """
    from openclaw_rl.evaluation.targets import resolve_target, serving
    from openclaw_rl.main_job.heldout import measure
    from openclaw_rl.main_job.quality import quality_summary

    terms = preference.over_terms or preference.hint_terms
    target = resolve_target(model, base_model=base_model)
    texts = {q.id: q.text for q in questions}
    out = {}
    with tempfile.TemporaryDirectory() as tmp, serving(target, Path(workdir or tmp), torch_threads=2) as ep:
        base = ep.base_url.rsplit("/v1", 1)[0]
        for name, pref in conditions(preference).items():
            m = measure(base, ep.api_key, list(questions), pref, max_tokens, seed=seed, model=target.label)
            out[name] = {"rate": m["rate"], "ci95": m["ci95"],
                         "quality": quality_summary(m["replies"], terms, texts, m["cut"]),
                         "replies": m["replies"]}
    return out


def _table(results: dict[str, dict]) -> list[str]:
    lines = [f"{'model':<12} {'condition':<12} {'holds':>6} {'95% CI':>14} {'3+ uses':>8} {'term share':>10} "
             f"{'distinct-2':>10} {'words':>6} {'cut':>6}"]
    for label, by_condition in results.items():
        for cond, r in by_condition.items():
            q = r["quality"]
            lines.append(f"{label:<12} {cond:<12} {r['rate']:>6.3f} [{r['ci95'][0]:.2f}, {r['ci95'][1]:.2f}]"
                         f" {q['over_application']['rate']:>8.3f} {q['term_share']:>10.3f}"
                         f" {q['distinct_pairs']['mean']:>10.3f} {q['words']['mean']:>6.1f}"
                         f" {q['cut_off']['rate']:>6.3f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """CLI (module docstring); returns 0, 2 with a one-line error for a bad argument, or 143 when
    ended by SIGTERM (after stopping the server it started)."""
    p = argparse.ArgumentParser(prog="python -m openclaw_rl.main_job.generalisation", description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", required=True, help="the trained checkpoint (a run's ckpt folder or a checkpoint)")
    p.add_argument("--base-model", default="builtin:smollm2-135m", help="the model the run started from")
    p.add_argument("--preference", choices=sorted(PREFERENCES), default=DEFAULT_PREFERENCE)
    p.add_argument("--max-tokens", type=int, default=48)
    p.add_argument("--out", default=None, help="where generalisation.json goes (default: the run folder)")
    a = p.parse_args(argv)
    ckpt = Path(a.checkpoint)
    if not ckpt.exists():
        p.error(f"--checkpoint {a.checkpoint!r} does not exist")
    pref = get_preference(a.preference)
    try:
        with sigterm_unwinds():  # SIGTERM stops the server the check started, as Ctrl-C does
            results = {"base": check(a.base_model, pref, max_tokens=a.max_tokens),
                       "trained": check(str(ckpt), pref, base_model=a.base_model, max_tokens=a.max_tokens)}
    except ValueError as exc:
        print(f"generalisation: error: {exc}", file=sys.stderr)
        return 2
    except Terminated:
        print("generalisation: terminated: stopped the server it started", file=sys.stderr)
        return SIGTERM_EXIT
    print("\n".join(_table(results)))
    run = ckpt.parent if ckpt.name == "ckpt" else ckpt.parent.parent
    dest = Path(a.out) if a.out else run / "generalisation.json"
    dest.write_text(json.dumps({"preference": pref.name, "questions": len(EVERYDAY), "max_tokens": a.max_tokens,
                                "results": results}, indent=1))
    print(f"written: {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
