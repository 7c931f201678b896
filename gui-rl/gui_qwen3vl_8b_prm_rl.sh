#!/usr/bin/env bash
# gui-rl, Qwen3-VL-8B: MiniWoB++ outcome + step PRM with the step-wise estimator (the judge sees
# the instruction, the history of actions and observations, and the step's next observation).
# A thin variant of gui_qwen3vl_8b_rl.sh: PRM_ENABLE=1, PRM_MODEL_PATH (default the policy),
# PRM_M, PRM_STEP_COEF; every other variable works the same.
set -e
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export MODEL_PATH=${MODEL_PATH:-${HF_CKPT:-}}
export PRM_ENABLE=${PRM_ENABLE:-1}
[ -z "$PRM_MODEL_PATH" ] && [ -n "$MODEL_PATH" ] && export PRM_MODEL_PATH=$MODEL_PATH
exec bash "$SCRIPT_DIR/gui_qwen3vl_8b_rl.sh" "$@"
