"""``make run``: the main job on the embedded model, on CPU, end to end (``--method`` / ``METHOD``:
``combine`` by default, ``rl`` for Binary RL, ``opd`` for on-policy distillation).

1. Starts the intercept server on ``builtin:smollm2-135m`` with capture on.
2. Measures on held-out questions (MT-bench and GSM8K, never trained on; side turns; fixed seeds)
   how often the policy meets the simulated user's stated preference
   (:data:`openclaw_rl.preferences.DEFAULT_PREFERENCE`, chosen by measured baseline).
3. Trains on Ray (rollout manager: store + judges; train actor: LoRA policy) while the simulated
   user talks to the server through the ``openai`` SDK and reacts to every reply, the last one of
   each session included, so every main turn has a next state. Each step's weights are published
   to the server while requests keep flowing.
4. Measures the held-out questions again (same seeds), re-serves the saved checkpoint on a fresh
   server and measures once more, and prints a summary: traffic and judgement counts, the judges'
   agreement with what the user really thought, the user's satisfaction per weight version, and
   the held-out before/after with the paired difference, its 95% interval and an exact McNemar
   p-value, plus the learning plot (PNG).

See ``docs/learning.md`` for the measured numbers and how the task was chosen. The entry point is
:func:`openclaw_rl.main_job.run.main`; this package file imports nothing, so that a module of the
package (``openclaw_rl.main_job.progress``, which every launch script's console runs) loads without
the whole job (0.4 s of CPU).
"""
