"""``python slime/train_async.py ...``: the train loop with rollout collection overlapping the
train step (slime's ``train_async.py``); the same as ``slime/train.py --async-train``."""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # `python slime/train_async.py`: the repository, not slime/, is on the path
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from slime.train import main  # noqa: E402

if __name__ == "__main__":
    argv = sys.argv[1:]
    sys.exit(main(argv if "--async-train" in argv else [*argv, "--async-train"], prog="slime/train_async.py"))
