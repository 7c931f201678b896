"""terminal-rl: AgentBench OS shell tasks in the bubblewrap sandbox (env, tasks, checks).

* :mod:`.convert`  the inspect-evals wheel -> task dirs + ``train.jsonl`` / ``heldout.jsonl``
  (``python -m openclaw_rl.envs.terminal.convert --out DIR``). Split: held-out = AgentBench's 26
  dev tasks (25 run offline), train = its 119 test tasks (106 run offline); 14 of 145 do not
  run offline (``skipped.json`` says why: 11 need AgentBench's ``init/*`` scripts that the wheel
  does not ship, 2 install packages with apt, 1 has a check that takes minutes on a full root).
* :mod:`.data`     where the converted data lives: generated on first use into
  ``$OPENCLAW_RL_CACHE/terminal/`` from the wheel ``make install`` downloads; never committed.
* :mod:`.checks`   setup and scoring (inspect-evals' scorer, with the expected answer taken
  before the agent acts).
* :mod:`.env`      ``TerminalEnv`` (the Environment protocol) and ``make_env``, registered as
  ``terminal`` -> ``openclaw_rl.envs.terminal.env:make_env``.
"""
