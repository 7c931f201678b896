"""``python -m openclaw_rl.main_job`` (what ``make run`` calls): the main job, or with ``--history``
/ ``--history-first`` its history-first variant (:mod:`openclaw_rl.main_job.history_first`).

SIGTERM unwinds like Ctrl-C (:mod:`openclaw_rl.interrupt`): the policy server, Ray and the
simulated users the job started are stopped before it exits (143; Ctrl-C: 130). While the trainer
runs, Ray's driver has its own SIGTERM handler (``sys.exit(15)``, which unwinds the same way); its
exit is reported as ours."""

import os
import signal
import sys

from openclaw_rl.interrupt import SIGTERM_EXIT, Terminated, sigterm_unwinds
from openclaw_rl.main_job.history_first import run_history_first
from openclaw_rl.main_job.run import main, parse_main_args

args = parse_main_args(sys.argv[1:])
terminal = os.fdopen(os.dup(1), "w", buffering=1)  # the job sends fds 1 and 2 to its run.log
try:
    with sigterm_unwinds():
        code = run_history_first(args) if args.history_variant else main(sys.argv[1:])
except (KeyboardInterrupt, SystemExit) as exc:
    terminated = isinstance(exc, Terminated) or (isinstance(exc, SystemExit) and exc.code == signal.SIGTERM)
    if isinstance(exc, SystemExit) and not terminated:
        raise
    terminal.write(f"[main job] {'terminated' if terminated else 'interrupted'}: stopped the server, Ray and "
                   "the simulated users it started\n")
    code = SIGTERM_EXIT if terminated else 130
sys.exit(code)
