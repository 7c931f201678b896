#!/usr/bin/env bash
# gui-rl: MiniWoB++ web tasks in headless Chromium driven by Playwright (Track 2).
#
#   ENV_TYPE=gui SCREENSHOT_BACKEND=playwright PARALLEL_ENVS=16 bash gui-rl/run_gui_rl.sh
#
# The script starts the GUI environment pool (python -m openclaw_rl.envs.gui.pool_server, one
# headless Chromium per slot, prewarmed) unless GUI_ENV_SERVER_URL names a running one, waits for
# it, and submits the training job. Each episode leases a browser, loads a MiniWoB++ page with a
# seed, and the policy acts with pyautogui commands (the computer tool) from the text observation
# (the page's elements with coordinates); MiniWoB's own reward scores it (+1 success, -1 not),
# plus the step PRM with PRM_ENABLE=1 (gui_qwen3vl_8b_prm_rl.sh). Every step goes through the
# intercept server, so the trained ids and logprobs are the sampled ones.
#
# Environment (besides openclaw_rl/launch/train_job.sh's MODEL_PATH, CKPT_SAVE_DIR, ROLLOUT_ARGS,
# OPTIMIZER_ARGS, LORA_ARGS, TRAIN_GPUS, ROLLOUT_GPUS, PORT, ...):
#   ENV_TYPE               gui (the only value this script takes)
#   SCREENSHOT_BACKEND     playwright (default) or selenium (the same Chromium through chromedriver)
#   PARALLEL_ENVS          episodes at once (default 16; CPU: 2)
#   GUI_ENV_SERVER_URL     a running GUI pool (default: start one on GUI_ENV_SERVER_HOST:GUI_ENV_SERVER_PORT,
#                          127.0.0.1:18080)
#   GUI_POOL_MAX_ENVS      browsers in the started pool (default PARALLEL_ENVS)
#   GUI_PREWARM_ENVS       browsers started before the first episode (default GUI_POOL_MAX_ENVS)
#   GUI_MAX_STEPS          actions per episode (default: the gui family's --gui-max-steps; CPU: 3)
#   GUI_ACTION_SPACE       pyautogui
#   GUI_OBSERVATION_TYPE   screenshot_a11y_tree (the family's default), a11y_tree, screenshot; a
#                          vision-language MODEL_PATH (Qwen2-VL / Qwen2.5-VL / Qwen3-VL) sees the
#                          screenshot as an image, a text one the element text (screenshot alone: refused)
#   GUI_MAX_IMAGE_HISTORY_LENGTH  screenshots kept as images in the history (default 3) =
#                          --gui-max-image-history-length
#   GUI_SCREEN_WIDTH/HEIGHT  the browser screen (default 640 x 480)
#   GUI_TRAIN_META_PATH    {"miniwob": [pages]} to train on (default: the train split, 102 pages x 10 seeds)
#   GUI_RESULT_DIR         per-episode results (default outputs/gui-rl/results)
#   NUM_ROLLOUT            training steps (default 3 on CPU with the embedded model, else 1000)
#   PRM_ENABLE, PRM_MODEL_PATH, PRM_M, PRM_STEP_COEF   the step PRM
set -e
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../openclaw_rl/launch/train_job.sh"
source "$REPO_DIR/openclaw_rl/launch/agent_job.sh"

require_env_type gui
export SCREENSHOT_BACKEND=${SCREENSHOT_BACKEND:-playwright}
case "$SCREENSHOT_BACKEND" in
  playwright) ;;
  selenium) command -v chromedriver >/dev/null || { echo "$LAUNCH_SCRIPT: SCREENSHOT_BACKEND=selenium needs chromedriver (Debian package chromium-driver); or use SCREENSHOT_BACKEND=playwright" >&2; exit 2; } ;;
  *) echo "$LAUNCH_SCRIPT: SCREENSHOT_BACKEND must be playwright or selenium, got '$SCREENSHOT_BACKEND'" >&2; exit 2 ;;
esac
export PARALLEL_ENVS=${PARALLEL_ENVS:-$([ "$CPU_RUN" = 1 ] && echo 2 || echo 16)}
if [ "$CPU_RUN" = 1 ]; then export GUI_MAX_STEPS=${GUI_MAX_STEPS:-3}; fi
export GUI_POOL_MAX_ENVS=${GUI_POOL_MAX_ENVS:-$PARALLEL_ENVS}
export GUI_PREWARM_ENVS=${GUI_PREWARM_ENVS:-$GUI_POOL_MAX_ENVS}
if [ "$GUI_OBSERVATION_TYPE" = screenshot ]; then   # a text policy cannot play from screenshots alone
  (cd "$REPO_DIR" && "$PYTHON" - "$MODEL_PATH" "$LAUNCH_SCRIPT" <<'PY') || exit 2
import sys
from openclaw_rl.envs.gui.env import check_model
try:
    check_model("screenshot", sys.argv[1])
except Exception as exc:
    sys.exit(f"{sys.argv[2]}: MODEL_PATH={sys.argv[1]}: {exc}")
PY
fi
export GUI_RESULT_DIR=$(abs_path "${GUI_RESULT_DIR:-$REPO_DIR/outputs/gui-rl/results}")
case "$PARALLEL_ENVS$GUI_MAX_STEPS$GUI_POOL_MAX_ENVS$GUI_PREWARM_ENVS" in
  *[!0-9]*) echo "$LAUNCH_SCRIPT: PARALLEL_ENVS, GUI_MAX_STEPS, GUI_POOL_MAX_ENVS, GUI_PREWARM_ENVS must be integers" >&2; exit 2 ;;
esac
if [ -z "$PROMPT_DATA" ]; then   # the train split, or the pages GUI_TRAIN_META_PATH names
  [ -n "$GUI_TRAIN_META_PATH" ] && export GUI_TRAIN_META_PATH=$(abs_path "$GUI_TRAIN_META_PATH")
  PROMPT_DATA=$(cd "$REPO_DIR" && "$PYTHON" -m openclaw_rl.agentic.families train gui) || exit 2
fi
PROMPT_DATA=$(abs_path "$PROMPT_DATA")
[ -f "$PROMPT_DATA" ] || { echo "$LAUNCH_SCRIPT: PROMPT_DATA $PROMPT_DATA: no such file" >&2; exit 2; }
NUM_ROLLOUT=${NUM_ROLLOUT:-$([ "$CPU_RUN" = 1 ] && echo 3 || echo 1000)}

if [ -z "$GUI_ENV_SERVER_URL" ] && [ -z "$TRAIN_JOB_DRY_RUN" ]; then
  GUI_ENV_SERVER_HOST=${GUI_ENV_SERVER_HOST:-127.0.0.1}
  GUI_ENV_SERVER_PORT=${GUI_ENV_SERVER_PORT:-18080}
  mkdir -p "$LOG_DIR"
  rm -f "$LOG_DIR/gui-pool.port"   # GUI_ENV_SERVER_PORT=0: the pool binds a free port and writes it here
  (cd "$REPO_DIR" && exec "$PYTHON" -m openclaw_rl.envs.gui.pool_server --host "$GUI_ENV_SERVER_HOST" \
    --port "$GUI_ENV_SERVER_PORT" --port-file "$LOG_DIR/gui-pool.port" --max-envs "$GUI_POOL_MAX_ENVS" \
    --prewarm-envs "$GUI_PREWARM_ENVS") \
    >"$LOG_DIR/gui-pool.log" 2>&1 &
  GUI_POOL_PID=$!
  HELPER_PIDS="$HELPER_PIDS $GUI_POOL_PID"
  trap _train_job_cleanup EXIT
  GUI_ENV_SERVER_URL=$(cd "$REPO_DIR" && "$PYTHON" -m openclaw_rl.launch.wait_pool --name "$LAUNCH_SCRIPT: the GUI pool" \
    --pid "$GUI_POOL_PID" --port-file "$LOG_DIR/gui-pool.port" --host "$GUI_ENV_SERVER_HOST" \
    --warm "$GUI_PREWARM_ENVS" --timeout 180 --log "$LOG_DIR/gui-pool.log") || exit 2
  export GUI_ENV_SERVER_URL
  echo "$LAUNCH_SCRIPT: GUI pool on $GUI_ENV_SERVER_URL (pid $GUI_POOL_PID, $GUI_PREWARM_ENVS browsers warm)"
fi
echo "$LAUNCH_SCRIPT: PROMPT_DATA=$PROMPT_DATA GUI_MAX_STEPS=${GUI_MAX_STEPS:-default} PARALLEL_ENVS=$PARALLEL_ENVS GUI_OBSERVATION_TYPE=${GUI_OBSERVATION_TYPE:-default}"

# the GUI_* settings reach the job as the gui family's flags (their environment fallbacks)
agent_job_defaults generate.py \
  "--rollout-batch-size 8 --n-samples-per-prompt 8 --rollout-max-response-len 1024 --rollout-max-context-len 32768 --rollout-temperature 1.0" \
  "--rollout-batch-size 2 --n-samples-per-prompt 2 --rollout-max-response-len 96 --rollout-max-context-len 4096 --rollout-temperature 1.0"
submit_train_job "$@"
