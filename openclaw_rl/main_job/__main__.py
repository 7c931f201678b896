"""``python -m openclaw_rl.main_job`` (what ``make run`` calls): the main job, or with ``--history``
/ ``--history-first`` its history-first variant (:mod:`openclaw_rl.main_job.history_first`)."""

import sys

from openclaw_rl.main_job.history_first import run_history_first
from openclaw_rl.main_job.run import main, parse_main_args

args = parse_main_args(sys.argv[1:])
sys.exit(run_history_first(args) if args.history_variant else main(sys.argv[1:]))
