#!/usr/bin/env bash
# Before/after: evaluate the base model and a run's latest checkpoint in one command and print
# the deltas (after - before) with their 95% intervals.
#
#   bash openclaw-test/before_after.sh --run SAVE_DIR [--before MODEL (default: the run's base model)] [run_eval.sh options]
#
# The same as `openclaw-rl eval-before-after ...`.
set -e

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$SCRIPT_DIR/.." && pwd)"
PYTHON=${PYTHON:-$REPO_DIR/.venv/bin/python}
[ -x "$PYTHON" ] || PYTHON=$(command -v python3)
export PYTHONPATH="$REPO_DIR${PYTHONPATH:+:$PYTHONPATH}"

exec "$PYTHON" -m openclaw_rl.cli eval-before-after "$@"
