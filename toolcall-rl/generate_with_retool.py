"""toolcall-rl's plugins (upstream names): ``generate`` (``--custom-generate-function-path``) and
``reward_func`` (``--custom-rm-path``, with ``--reward-key score``), both the ``math-tool``
family's (:class:`openclaw_rl.envs.math_tool.family.MathToolFamily`).

``generate`` runs one ReTool-style episode per sample: the model calls ``code_interpreter``
(a sandboxed Python run; limits from ``TOOLS_CONFIG`` / ``TOOL_CONFIGS``), reads the program's
output in ``<interpreter>...</interpreter>``, and boxes its answer; at most ``max_turns`` replies.
Every step goes through the intercept server.
``reward_func`` returns the environment's score of the episode (``MathToolEnv.evaluate``: the
final answer checked against the label, +1 correct; a wrong answer upstream's tool-use shaped
``min(-0.6, -1.1 + 0.05 * interpreter runs)``, :mod:`openclaw_rl.envs.math_tool.reward`) as
``{"score", "acc", "pred"}``; the environment counts its own interpreter runs, so a malformed call
earns no shaping. An episode the environment could not score is scored from its final text.
"""

from __future__ import annotations

from openclaw_rl.agentic.generate import family_plugins

generate, reward_func = family_plugins("math-tool")
