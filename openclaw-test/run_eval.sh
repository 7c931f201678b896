#!/usr/bin/env bash
# Evaluate checkpoints through the OpenAI-compatible server on real public benchmarks:
#   conversation (simulated student/teacher users on GSM8K), coding (HumanEval pass@1),
#   tool-use (BFCL simple/multiple/parallel).
#
#   bash openclaw-test/run_eval.sh --model-path P [--model-path P2 ...] \
#       [--eval-tasks conversation,coding,tool-use] [--limit N] [--out DIR] [--seed S] [--user-llm-url URL]
#
# P: a checkpoint folder, a run's checkpoint-latest (or save folder), builtin:smollm2-135m, or use
# --server-url URL for a running server. Writes DIR/results.{json,md,png}; re-running the same
# command resumes. All flags: --help. The same as `openclaw-rl eval ...`.
set -e

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$SCRIPT_DIR/.." && pwd)"
PYTHON=${PYTHON:-$REPO_DIR/.venv/bin/python}
[ -x "$PYTHON" ] || PYTHON=$(command -v python3)
export PYTHONPATH="$REPO_DIR${PYTHONPATH:+:$PYTHONPATH}"

exec "$PYTHON" -m openclaw_rl.cli eval "$@"
