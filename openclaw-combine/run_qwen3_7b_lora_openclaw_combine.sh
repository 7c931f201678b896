#!/usr/bin/env bash
# Combine with LoRA: only the adapter is trained and published; the frozen base teacher is the
# same weights with the adapter disabled. Same env vars as run_qwen3_7b_openclaw_combine.sh, plus
# LORA_ARGS.
set -e
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export LORA_ARGS=${LORA_ARGS:-"--use-lora --lora-rank 16 --lora-alpha 32 --lora-dropout 0.0 \
  --lora-target-modules q_proj k_proj v_proj o_proj"}
export OPTIMIZER_ARGS=${OPTIMIZER_ARGS:-"--lr 1e-5 --weight-decay 0.0 --adam-beta1 0.9 --adam-beta2 0.98"}
export CKPT_SAVE_DIR=${CKPT_SAVE_DIR:-$(cd "$SCRIPT_DIR/.." && pwd)/outputs/openclaw-combine-lora/ckpt}
exec bash "$SCRIPT_DIR/run_qwen3_7b_openclaw_combine.sh" "$@"
