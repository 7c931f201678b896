#!/usr/bin/env bash
# gui-rl, Qwen3-VL-8B: MiniWoB++ outcome reward (+1 / -1) with GRPO.
# A thin variant of run_gui_rl.sh with upstream's names: HF_CKPT (= MODEL_PATH), SAVE_CKPT
# (= CKPT_SAVE_DIR), GUI_ENV_SERVER_URL/HOST/PORT, GUI_POOL_MAX_ENVS, GUI_PREWARM_ENVS, GUI_MAX_STEPS,
# GUI_ACTION_SPACE, GUI_OBSERVATION_TYPE (default screenshot_a11y_tree: the screenshot for a
# vision-language policy and the element text for a text one), GUI_SCREEN_WIDTH/HEIGHT,
# GUI_TRAIN_META_PATH, GUI_RESULT_DIR; every other variable of run_gui_rl.sh works the same.
# A vision-language HF_CKPT (Qwen3-VL / Qwen2.5-VL / Qwen2-VL) gets each screenshot as an image_url
# part and trains on its pixel values; GUI_MAX_IMAGE_HISTORY_LENGTH (default 3) screenshots stay
# images in the history; OPTIMIZER_ARGS="--lr 1e-6 --freeze-vision-tower" keeps the vision tower fixed.
set -e
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export MODEL_PATH=${MODEL_PATH:-${HF_CKPT:-}}
[ -n "$SAVE_CKPT" ] && export CKPT_SAVE_DIR=${CKPT_SAVE_DIR:-$SAVE_CKPT}
export ENV_TYPE=${ENV_TYPE:-gui}
export GUI_SLEEP_AFTER_EXECUTION=${GUI_SLEEP_AFTER_EXECUTION:-0.5}
exec bash "$SCRIPT_DIR/run_gui_rl.sh" "$@"
