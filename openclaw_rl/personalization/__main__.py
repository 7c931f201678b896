"""``python -m openclaw_rl.personalization``: the benchmark (:mod:`openclaw_rl.personalization.cli`)."""

import sys

from openclaw_rl.personalization.cli import main

sys.exit(main())
