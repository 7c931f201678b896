"""``python -m openclaw_rl.main_job`` (what ``make run`` calls)."""

import sys

from openclaw_rl.main_job.run import main

sys.exit(main())
