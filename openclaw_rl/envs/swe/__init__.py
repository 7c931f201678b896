"""swe-rl: repository repair in sandboxed per-episode copies of a task repository.

* :mod:`.convert`     the inspect-evals ``ipi_coding_agent`` repos -> SWE-bench-format instances
  (one local git repository each) and the train / eval split;
* :mod:`.data`        where the converted data lives (``$OPENCLAW_RL_CACHE/swe/``) and prompt rows
  from any instance file (``SWE_BENCH_PATH``);
* :mod:`.containers`  a "container": a bubblewrap sandbox holding a fresh copy of the repository
  (create / exec / diff / evaluate / destroy);
* :mod:`.exec_server` the per-machine exec server (upstream's ``/container/*`` API);
* :mod:`.pool_server` the lease pool in front of exec servers (``/allocate`` ... ``/close``);
* :mod:`.backends`    where an episode's container lives (in process, exec servers, pool server);
* :mod:`.config`      mini-swe-agent's YAML config (templates, step limit);
* :mod:`.env`         ``SweEnv`` (the Environment protocol) and ``make_env`` (registered ``swe``);
* :mod:`.agent`       the mini-swe-agent-style loop (one bash block per step);
* :mod:`.injection`   did the agent follow the instruction planted in the repository?
"""
