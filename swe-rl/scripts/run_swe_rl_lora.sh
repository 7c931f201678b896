#!/usr/bin/env bash
# swe-rl: GRPO with a LoRA adapter. A thin variant of ../run_swe_rl.sh (LORA_ARGS), with upstream's
# names as in run_swe_rl_8b.sh; every other variable of run_swe_rl.sh works the same.
set -e
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export MODEL_PATH=${MODEL_PATH:-${HF_CKPT:-}}
[ -n "$SAVE_CKPT" ] && export CKPT_SAVE_DIR=${CKPT_SAVE_DIR:-$SAVE_CKPT}
export ENV_TYPE=${ENV_TYPE:-swe}
export LORA_ARGS=${LORA_ARGS:-"--use-lora --lora-rank 64 --lora-alpha 128 --lora-dropout 0.05"}
exec bash "$SCRIPT_DIR/../run_swe_rl.sh" "$@"
