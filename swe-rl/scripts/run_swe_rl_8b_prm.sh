#!/usr/bin/env bash
# swe-rl, Qwen3-8B: the resolved / not outcome + the step PRM, with the step-wise estimator.
# A thin variant of ../run_swe_rl.sh (PRM_ENABLE=1; PRM_MODEL_PATH defaults to the policy checkpoint;
# PRM_URL, PRM_M, PRM_STEP_COEF are read), with upstream's names as in run_swe_rl_8b.sh.
set -e
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export MODEL_PATH=${MODEL_PATH:-${HF_CKPT:-}}
[ -n "$SAVE_CKPT" ] && export CKPT_SAVE_DIR=${CKPT_SAVE_DIR:-$SAVE_CKPT}
export ENV_TYPE=${ENV_TYPE:-swe}
export PRM_ENABLE=${PRM_ENABLE:-1}
[ -z "$PRM_MODEL_PATH" ] && [ -z "$PRM_URL" ] && [ -n "$MODEL_PATH" ] && export PRM_MODEL_PATH=$MODEL_PATH
exec bash "$SCRIPT_DIR/../run_swe_rl.sh" "$@"
