"""terminal-rl's plugins (upstream names): ``generate`` (``--custom-generate-function-path``) and
``reward_func`` (``--custom-rm-path``, with ``--reward-key score``), both the ``terminal`` family's
(:class:`openclaw_rl.envs.terminal.family.TerminalFamily`).

``generate`` runs one shell episode per sample in a fresh sandbox (the task's setup already run),
at most ``--terminal-max-steps`` (``MAX_STEPS``) model replies; every step goes through the
intercept server. ``reward_func`` returns the task checks' verdict as ``{"score": 2*acc - 1,
"acc": acc}`` (the environment's score; an episode that could not be scored gets -1).
"""

from __future__ import annotations

from openclaw_rl.agentic.generate import family_plugins

generate, reward_func = family_plugins("terminal")
