#!/usr/bin/env bash
# terminal-rl, Qwen3-8B: GRPO on the task checks (reward 2*acc - 1).
# A thin variant of run_terminal_rl.sh with upstream's names: HF_CKPT (= MODEL_PATH), SAVE_CKPT
# (= CKPT_SAVE_DIR), ENV_SERVER_URL, WORKER_URLS, ROUTER_PORT, DATASET_DIR, MAX_STEPS, PARALLEL_ENVS;
# every other variable of run_terminal_rl.sh works the same.
set -e
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export MODEL_PATH=${MODEL_PATH:-${HF_CKPT:-}}
[ -n "$SAVE_CKPT" ] && export CKPT_SAVE_DIR=${CKPT_SAVE_DIR:-$SAVE_CKPT}
export ENV_TYPE=${ENV_TYPE:-terminal}

exec bash "$SCRIPT_DIR/run_terminal_rl.sh" "$@"
