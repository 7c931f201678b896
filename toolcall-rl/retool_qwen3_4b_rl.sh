#!/usr/bin/env bash
# toolcall-rl, Qwen3-4B: GRPO on answer correctness (upstream retool_qwen3_4b_rl.sh).
# A thin variant of run_toolcall_rl.sh with upstream's names: HF_CKPT (the checkpoint, = MODEL_PATH),
# SAVE_CKPT (= CKPT_SAVE_DIR), PROMPT_DATA, TOOL_CONFIGS, PRM_MODEL_PATH, PRM_M, PRM_STEP_COEF;
# every other variable of run_toolcall_rl.sh works the same.
set -e
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export MODEL_PATH=${MODEL_PATH:-${HF_CKPT:-}}
[ -n "$SAVE_CKPT" ] && export CKPT_SAVE_DIR=${CKPT_SAVE_DIR:-$SAVE_CKPT}
export ENV_TYPE=${ENV_TYPE:-toolcall}

exec bash "$SCRIPT_DIR/run_toolcall_rl.sh" "$@"
