#!/usr/bin/env bash
# Binary RL on live OpenClaw conversations: a PRM votes +1 / -1 / 0 on each main turn from its
# next state; the reward is broadcast over the turn's tokens; PPO clipped loss.
#
# Starts a Ray head on loopback if none is running, then submits the training job, which starts
# the intercept server on $PORT (point OpenClaw at http://127.0.0.1:$PORT/v1) and trains in the
# background while it serves. With DATA_PATH set it trains offline from recorded sessions.
# Arguments given to the script are appended to the trainer's flags (later flags win).
# Without a GPU and without MODEL_PATH it runs on CPU with the embedded model.
set -e

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$SCRIPT_DIR/.." && pwd)"
cd "$SCRIPT_DIR"

PYTHON=${PYTHON:-$REPO_DIR/.venv/bin/python}
[ -x "$PYTHON" ] || PYTHON=$(command -v python3)
export PATH="$(dirname "$PYTHON"):$PATH"

HAS_GPU=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then HAS_GPU=1; fi
if [ -z "$MODEL_PATH" ]; then
  if [ "$HAS_GPU" = 1 ]; then
    echo "run_qwen3_7b_openclaw_rl.sh: set MODEL_PATH to your Qwen3-7B checkpoint folder" >&2; exit 2
  fi
  MODEL_PATH=builtin:smollm2-135m
fi
PRM_MODEL_PATH=${PRM_MODEL_PATH:-$MODEL_PATH}
DATA_PATH=${DATA_PATH:-}
CKPT_SAVE_DIR=${CKPT_SAVE_DIR:-$REPO_DIR/outputs/openclaw-rl/ckpt}
TRAIN_GPUS=${TRAIN_GPUS:-$HAS_GPU}
ROLLOUT_GPUS=${ROLLOUT_GPUS:-$HAS_GPU}
MAJORITY_VOTE_N=${MAJORITY_VOTE_N:-1}
MAJORITY_VOTE_THRESHOLD=${MAJORITY_VOTE_THRESHOLD:-0.5}
PORT=${PORT:-30000}
RAY_PORT=${RAY_PORT:-6379}
RAY_DASHBOARD_PORT=${RAY_DASHBOARD_PORT:-8265}
LOG_DIR=${LOG_DIR:-$REPO_DIR/logs}

CKPT_ARGS=${CKPT_ARGS:-"--model-path $MODEL_PATH --save $CKPT_SAVE_DIR --save-interval 10"}
ROLLOUT_ARGS=${ROLLOUT_ARGS:-"--rollout-batch-size 16 --num-rollouts-per-prompt 1 --num-rollout 100000 \
  --rollout-max-response-len 1024 --rollout-temperature 1.0 --max-staleness 4"}
OPTIMIZER_ARGS=${OPTIMIZER_ARGS:-"--lr 1e-6 --weight-decay 0.1 --adam-beta1 0.9 --adam-beta2 0.98"}
RL_ARGS=${RL_ARGS:-"--advantage-estimator broadcast --eps-clip 0.2 --eps-clip-high 0.28 --use-tis --tis-cap 2.0"}
PRM_ARGS=${PRM_ARGS:-"--prm-model-path $PRM_MODEL_PATH --majority-vote-n $MAJORITY_VOTE_N \
  --majority-vote-threshold $MAJORITY_VOTE_THRESHOLD --num-judge-workers 2"}
SERVE_ARGS=${SERVE_ARGS:-"--port $PORT --served-model-name ${SERVED_MODEL_NAME:-policy} \
  --rl-buffer-dir ${RL_BUFFER_DIR:-$REPO_DIR/rl_buffer} --log-dir $LOG_DIR"}
LORA_ARGS=${LORA_ARGS:-}
EXTRA_ARGS=${EXTRA_ARGS:-}
[ -n "$DATA_PATH" ] && SERVE_ARGS="$SERVE_ARGS --data-path $(cd "$(dirname "$DATA_PATH")" && pwd)/$(basename "$DATA_PATH")"

# A Ray head on loopback, unless one is already running. Token authentication on: the token
# lives in ~/.ray/auth_token (generated once), and every ray command below uses it.
export RAY_AUTH_MODE=${RAY_AUTH_MODE:-token}
[ "$RAY_AUTH_MODE" = token ] && ray get-auth-token --generate >/dev/null
export RAY_ADDRESS=${RAY_ADDRESS:-127.0.0.1:$RAY_PORT}
if ! ray status --address "$RAY_ADDRESS" >/dev/null 2>&1; then
  ray start --head --node-ip-address 127.0.0.1 --port "$RAY_PORT" --dashboard-host 127.0.0.1 \
    --dashboard-port "$RAY_DASHBOARD_PORT" --num-gpus "$((TRAIN_GPUS + ROLLOUT_GPUS > 0 ? TRAIN_GPUS + ROLLOUT_GPUS : 0))" \
    --disable-usage-stats
fi

ray job submit --address "http://127.0.0.1:$RAY_DASHBOARD_PORT" --working-dir .. -- \
  python slime/train.py \
  $CKPT_ARGS $ROLLOUT_ARGS $OPTIMIZER_ARGS $RL_ARGS $PRM_ARGS $SERVE_ARGS $LORA_ARGS $EXTRA_ARGS "$@"
