#!/usr/bin/env bash
# The personalization benchmark: sessions until each simulated user's preference holds (the
# reference paper's metric), per method, against two baselines that do not train.
#
#   bash openclaw-test/run_personalization.sh [--method combine,rl,opd,none,memory] \
#       [--persona student,ta,teacher] [--seeds 3] [--sessions 30] [--model-path P] [--out DIR]
#
# Each method x seed is one run on a fresh server: the simulated users talk in sessions (the first
# reply of each is scored with its persona's rule) while the method trains live. Writes
# DIR/<time>/{table.md,results.json,personalization.png}. All flags: --help. The same as
# `openclaw-rl bench personalization ...`; docs/evaluation.md, "Personalization benchmark".
set -e

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$SCRIPT_DIR/.." && pwd)"
PYTHON=${PYTHON:-$REPO_DIR/.venv/bin/python}
[ -x "$PYTHON" ] || PYTHON=$(command -v python3)
export PYTHONPATH="$REPO_DIR${PYTHONPATH:+:$PYTHONPATH}"

exec "$PYTHON" -m openclaw_rl.cli bench personalization "$@"
