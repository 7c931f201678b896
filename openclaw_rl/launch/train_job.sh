# Shared by every launch script (source it, then call submit_train_job "$@"): the Python to use,
# the default model, a Ray head on loopback, the environment fallbacks carried into the job, and
# the job submission itself. A launch script only sets what its method needs (RL_ARGS, METHOD_ARGS)
# before calling submit_train_job.
#
# Inputs, all optional (environment or the calling script):
#   MODEL_PATH          policy checkpoint (CPU without it: the embedded builtin:smollm2-135m)
#   DATA_PATH           train offline from recorded sessions (no server is started)
#   CKPT_SAVE_DIR       checkpoints (default outputs/<method folder>/ckpt)
#   PORT, SERVED_MODEL_NAME, RL_BUFFER_DIR, LOG_DIR, RAY_PORT, RAY_DASHBOARD_PORT, RAY_ADDRESS,
#   RAY_AUTH_MODE (token), TRAIN_GPUS, ROLLOUT_GPUS, PYTHON
#   Every environment fallback of the trainer's flags (MAJORITY_VOTE_N, MAJORITY_VOTE_THRESHOLD,
#   PRM_MODEL_PATH, PRM_URL, JUDGE_MODEL_PATH, OPENCLAW_COMBINE_W_OPD, ...; the list:
#   python -m slime.run_args --env-names) is carried into the job's environment, where the
#   trainer reads it when the flag is not given (*_API_KEY variables excepted; see slime/run_args.py).
# Flag groups, each replacing its default entirely when set:
#   CKPT_ARGS ROLLOUT_ARGS OPTIMIZER_ARGS RL_ARGS PRM_ARGS SERVE_ARGS LORA_ARGS EXTRA_ARGS,
#   METHOD_ARGS (a method folder's plugin flags). Arguments of the launch script come last (win).

LAUNCH_SCRIPT="$(basename "$0")"
LAUNCH_DIR="$(cd "$(dirname "$0")" && pwd)"
REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
METHOD_DIR="$(basename "$LAUNCH_DIR")"   # the launch script's folder, relative to the repository root

PYTHON=${PYTHON:-$REPO_DIR/.venv/bin/python}
[ -x "$PYTHON" ] || PYTHON=$(command -v python3)
export PATH="$(dirname "$PYTHON"):$PATH"

HAS_GPU=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then HAS_GPU=1; fi
if [ -z "$MODEL_PATH" ]; then
  if [ "$HAS_GPU" = 1 ]; then
    echo "$LAUNCH_SCRIPT: set MODEL_PATH to your Qwen3-7B checkpoint folder" >&2; exit 2
  fi
  MODEL_PATH=builtin:smollm2-135m
fi
CKPT_SAVE_DIR=${CKPT_SAVE_DIR:-$REPO_DIR/outputs/$METHOD_DIR/ckpt}
TRAIN_GPUS=${TRAIN_GPUS:-$HAS_GPU}
ROLLOUT_GPUS=${ROLLOUT_GPUS:-$HAS_GPU}
PORT=${PORT:-30000}
RAY_PORT=${RAY_PORT:-6379}
RAY_DASHBOARD_PORT=${RAY_DASHBOARD_PORT:-8265}
LOG_DIR=${LOG_DIR:-$REPO_DIR/logs}

# Start a Ray head on loopback unless one is running. Token authentication on: the token lives in
# ~/.ray/auth_token (generated once), and every ray command uses it.
ensure_ray_head() {
  export RAY_AUTH_MODE=${RAY_AUTH_MODE:-token}
  [ "$RAY_AUTH_MODE" = token ] && ray get-auth-token --generate >/dev/null
  export RAY_ADDRESS=${RAY_ADDRESS:-127.0.0.1:$RAY_PORT}
  if ! ray status --address "$RAY_ADDRESS" >/dev/null 2>&1; then
    ray start --head --node-ip-address 127.0.0.1 --port "$RAY_PORT" --dashboard-host 127.0.0.1 \
      --dashboard-port "$RAY_DASHBOARD_PORT" --num-gpus "$((TRAIN_GPUS + ROLLOUT_GPUS > 0 ? TRAIN_GPUS + ROLLOUT_GPUS : 0))" \
      --disable-usage-stats
  fi
}

# Submit slime/train.py with the flag groups, the method's flags and the script's arguments.
submit_train_job() {
  local serve_default="--rl-buffer-dir ${RL_BUFFER_DIR:-$REPO_DIR/rl_buffer} --log-dir $LOG_DIR"
  if [ -n "$DATA_PATH" ]; then   # offline: no server is started, so no server-side flags
    serve_default="$serve_default --data-path $(cd "$(dirname "$DATA_PATH")" && pwd)/$(basename "$DATA_PATH")"
  else
    serve_default="--port $PORT --served-model-name ${SERVED_MODEL_NAME:-policy} $serve_default"
  fi
  local ckpt=${CKPT_ARGS:-"--model-path $MODEL_PATH --save $CKPT_SAVE_DIR --save-interval 10"}
  local rollout=${ROLLOUT_ARGS:-"--rollout-batch-size 16 --num-rollouts-per-prompt 1 --num-rollout 100000 \
    --rollout-max-response-len 1024 --rollout-temperature 1.0 --max-staleness 4"}
  local optimizer=${OPTIMIZER_ARGS:-"--lr 1e-6 --weight-decay 0.1 --adam-beta1 0.9 --adam-beta2 0.98"}
  local rl=${RL_ARGS:-"--advantage-estimator broadcast --eps-clip 0.2 --eps-clip-high 0.28 --use-tis --tis-cap 2.0"}
  local judges=${PRM_ARGS:-"--num-judge-workers 2"}
  local serve=${SERVE_ARGS:-$serve_default}
  local runtime_env
  runtime_env=$(cd "$REPO_DIR" && "$PYTHON" -m slime.run_args --runtime-env)
  ensure_ray_head
  cd "$REPO_DIR"
  ray job submit --address "http://127.0.0.1:$RAY_DASHBOARD_PORT" --working-dir "$REPO_DIR" \
    --runtime-env-json "$runtime_env" -- \
    python slime/train.py $ckpt $rollout $optimizer $rl $judges $serve ${METHOD_ARGS:-} ${LORA_ARGS:-} \
    ${EXTRA_ARGS:-} "$@"
}
