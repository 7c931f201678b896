"""The personalization benchmark: sessions until a simulated user's preference holds (issue 28).

The reference paper's headline metric for personal agents: simulated users (personas) talk to the
served model in sessions while it trains live; the first reply of each session is scored with the
persona's rule, and a method's number is the first session after which the rule held three times
in a row (lower is better). Every method of the project (``combine``, ``rl``, ``opd``) runs against
two baselines that do not train: ``none`` (the base model's floor) and ``memory`` (accepted hints kept
as lessons in the system prompt, ``--inject-lessons``).

* :mod:`.personas` — the registry of personas (the paper's Student, TA and Teacher, and the
  project's own preferences) and their rules;
* :mod:`.stability` — sessions to stable from a pass sequence;
* :mod:`.pacing` — a session starts once the trainer (or the memory's judge) caught up;
* :mod:`.run` — one method x seed run through the main job's server, user and trainer;
* :mod:`.report` — the table with intervals and significance, and the pass-rate plot;
* :mod:`.cli` — ``openclaw-rl bench personalization`` / ``openclaw-test/run_personalization.sh``.

docs/evaluation.md ("Personalization benchmark") has the commands and what the numbers mean.
"""
