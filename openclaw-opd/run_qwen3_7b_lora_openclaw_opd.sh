#!/usr/bin/env bash
# OPD with LoRA: only the adapter is trained and published to the serving engine; the frozen
# base teacher is the same weights with the adapter disabled (no second copy). Same env vars as
# run_qwen3_7b_openclaw_opd.sh, plus LORA_ARGS.
set -e
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export LORA_ARGS=${LORA_ARGS:-"--use-lora --lora-rank 16 --lora-alpha 32 --lora-dropout 0.0 \
  --lora-target-modules q_proj k_proj v_proj o_proj"}
export OPTIMIZER_ARGS=${OPTIMIZER_ARGS:-"--lr 1e-5 --weight-decay 0.0 --adam-beta1 0.9 --adam-beta2 0.98"}
export CKPT_SAVE_DIR=${CKPT_SAVE_DIR:-$(cd "$SCRIPT_DIR/.." && pwd)/outputs/openclaw-opd-lora/ckpt}
exec bash "$SCRIPT_DIR/run_qwen3_7b_openclaw_opd.sh" "$@"
