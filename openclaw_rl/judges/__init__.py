"""Judges: turn a served turn plus its next state into training signal.

Binary RL process reward model (PRM) judge:

* :mod:`.prompts` -- :class:`~.prompts.JudgeInput` (the judged turn's fields), the judge prompt
  (:func:`~.prompts.build_judge_messages`) and :func:`~.prompts.parse_verdict`;
* :mod:`.voting` -- :func:`~.voting.majority_vote` with threshold and invalid-vote accounting;
* :mod:`.modes` -- the ``--prm-mode`` / ``--hint-mode`` values, how ``auto`` resolves, and
  :func:`~.modes.build_backend`;
* :mod:`.backends` -- the backend interface, the judge-prompt modes (``logprob`` / ``generate``) of a
  local model, and any OpenAI-compatible endpoint;
* :mod:`.classifier` (``classifier``, the default on CPU: a trained classifier of the user's next
  state, :mod:`.feedback_corpus` its generated training corpus) and :mod:`.tool_signals` (structural
  verdicts for tool calls and results: errors, repeated calls, overwritten files);
* :mod:`.lexical` (``lexical``, ``hybrid``), :mod:`.prototype`, :mod:`.channel` -- next-state modes;
* :mod:`.prm` -- :class:`~.prm.PRMJudge`: votes per turn, concurrency, :class:`~.prm.Judgement`.

OPD hint judge: :mod:`.hints` (prompt, parser, selection rule, :class:`~.hints.HintJudge`),
:mod:`.hint_backend` (structured decoding on a local model), :mod:`.hint_extract` (extractive hints).

Measurement: :mod:`.cases` (the judge case file format, the shipped extended set and the
hand-written held-out set ``data/heldout_cases.jsonl``),
:mod:`.judge_eval` (``openclaw-rl judge-eval``), :mod:`.eval_cases` (the 12 original cases).
See ``docs/judges.md``.
"""
