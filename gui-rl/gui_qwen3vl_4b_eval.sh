#!/usr/bin/env bash
# gui-rl, Qwen3-VL-4B evaluation: the held-out MiniWoB++ pages (or GUI_EVAL_META_PATH's), one
# greedy episode per page and seed, through openclaw-test/run_eval.sh --eval-tasks gui.
#   HF_CKPT=/path/to/ckpt bash gui-rl/gui_qwen3vl_4b_eval.sh [--limit N] [--out DIR] ...
# Browsers run in the evaluation process, or on the GUI pool at GUI_ENV_SERVER_URL; GUI_MAX_STEPS,
# GUI_OBSERVATION_TYPE, GUI_SCREEN_WIDTH/HEIGHT, GUI_EVAL_META_PATH, GUI_RESULT_DIR as in run_gui_rl.sh.
set -e
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MODEL_PATH=${MODEL_PATH:-${HF_CKPT:-builtin:smollm2-135m}}
[ -n "$GUI_EVAL_META_PATH" ] && export GUI_EVAL_META_PATH=$(realpath -m -- "$GUI_EVAL_META_PATH")
exec bash "$SCRIPT_DIR/../openclaw-test/run_eval.sh" --model-path "$MODEL_PATH" --eval-tasks gui "$@"
