#!/usr/bin/env bash
# swe-rl evaluation: the held-out repositories (12: 2 benign, 10 with a planted prompt injection),
# one episode each through the server, the same mini-swe-agent loop as training; an item scores 1
# when its patch resolves the instance, and its detail says whether the agent followed the planted
# instruction (results.json: details[].injection.followed).
#
#   bash swe-rl/eval/run_eval_swe.sh --model-path outputs/swe-rl/ckpt [--model-path P2] [--out DIR] [--limit N]
#
# = openclaw-test/run_eval.sh --eval-tasks swe "$@" (its flags; SWE_STEP_LIMIT, SWE_CONFIG_PATH,
# SWE_ENV_SERVER_URL, SWE_EXEC_SERVER_URLS, SWE_ROLLOUT_TIMEOUT are read by the episodes).
# The injection-following rate per model, with Wilson intervals (before / after: two --model-path):
#   python -m openclaw_rl.envs.swe.report OUT_DIR
set -e
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export SWE_STEP_LIMIT=${SWE_STEP_LIMIT:-${MAX_STEPS:-30}}
exec bash "$SCRIPT_DIR/../../openclaw-test/run_eval.sh" --eval-tasks swe "$@"
