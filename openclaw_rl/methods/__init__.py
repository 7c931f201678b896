"""The three OpenClaw methods as :class:`slime.methods.Method` classes, registered with the
trainer through the ``slime.methods`` entry points (``pyproject.toml``):

* ``broadcast`` -> :class:`.binary_rl.BinaryRL` (PRM judge, the verdict on every token);
* ``opd`` -> :class:`.opd.OPD` (hint judge, hinted teacher, teacher - rollout log-probs);
* ``combine`` -> :class:`.combine.Combine` (both judges, per-branch normalised mix).

Each module is the whole method: its flags, its judge, its train-actor step, its advantages
and its loss. The logic they call lives in :mod:`openclaw_rl.opd` and :mod:`openclaw_rl.judges`.
"""
