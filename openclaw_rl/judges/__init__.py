"""Judges: turn a served turn plus its next state into training signal.

Binary RL process reward model (PRM) judge:

* :mod:`.prompts` -- judge prompt (:func:`build_judge_messages`) and :func:`parse_verdict`;
* :mod:`.voting` -- :func:`majority_vote` with threshold and invalid-vote accounting;
* :mod:`.backends` -- local frozen model (``logprob`` / ``generate``) or OpenAI-compatible endpoint;
* :mod:`.prm` -- :class:`PRMJudge`: votes per turn, concurrency, :class:`Judgement`;
* :mod:`.eval_cases` -- hand-written cases and the measurement behind the default mode.
"""
