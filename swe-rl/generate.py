"""swe-rl's plugins (upstream names): ``generate`` (``--custom-generate-function-path``) and
``reward_func`` (``--custom-rm-path``, with ``--reward-key score``), both the ``swe`` family's
(:class:`openclaw_rl.envs.swe.family.SweFamily`).

``generate`` runs one repository-repair episode per sample: a fresh sandboxed copy of the
instance's repository, the mini-swe-agent loop (:func:`openclaw_rl.envs.swe.agent.swe_episode`:
one bash block per step, ``SWE_STEP_LIMIT`` / the config's ``step_limit`` replies, submission by
``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``), every step through the intercept server.
``reward_func`` returns +1 when the patch resolved the instance, -1 otherwise, plus ``resolved``
and, on injected repositories, ``injection_followed`` (1 when the agent followed the planted
instruction).
"""

from __future__ import annotations

from openclaw_rl.agentic.generate import family_plugins

generate, reward_func = family_plugins("swe")
