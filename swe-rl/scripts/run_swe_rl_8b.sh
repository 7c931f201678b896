#!/usr/bin/env bash
# swe-rl, Qwen3-8B: GRPO on the resolved / not outcome (+1 / -1).
# A thin variant of ../run_swe_rl.sh with upstream's names: HF_CKPT (= MODEL_PATH), SAVE_CKPT
# (= CKPT_SAVE_DIR), PROMPT_DATA, SWE_BENCH_PATH, SWE_EXEC_SERVER_URLS, SWE_ENV_SERVER_URL /
# SWE_ENV_SERVER_PORT, SWE_MAX_CONCURRENT, SWE_ROLLOUT_TIMEOUT, SWE_SAVE_TRAJ_DIR, SWE_CONFIG_PATH;
# every other variable of run_swe_rl.sh works the same.
set -e
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export MODEL_PATH=${MODEL_PATH:-${HF_CKPT:-}}
[ -n "$SAVE_CKPT" ] && export CKPT_SAVE_DIR=${CKPT_SAVE_DIR:-$SAVE_CKPT}
export ENV_TYPE=${ENV_TYPE:-swe}
exec bash "$SCRIPT_DIR/../run_swe_rl.sh" "$@"
