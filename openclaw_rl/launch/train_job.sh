# Shared by every launch script (source it, then call submit_train_job "$@"): the Python to use,
# the default model, the paths, a Ray head on loopback, the environment fallbacks carried into the
# job, and the job submission itself. A launch script only sets what its method needs (RL_ARGS,
# METHOD_ARGS) before calling submit_train_job.
#
# Inputs, all optional (environment or the calling script):
#   MODEL_PATH          policy checkpoint (CPU without it: the embedded builtin:smollm2-135m)
#   DATA_PATH           train offline from recorded sessions (no server is started; one pass)
#   HISTORY_PATH        conversations from before this job, judged and trained first, the most recent
#                       first (--history-path): an OpenClaw state folder (~/.openclaw), a trajectory
#                       bundle, a trajectory store folder (what `openclaw-rl import-openclaw --out` wrote)
#                       or a session file; a bad one is a one-line error before anything starts
#   HISTORY_MAX_TURNS   most history turns judged and trained (default 256, the most recent ones)
#   CKPT_SAVE_DIR       checkpoints (default outputs/<method folder>/ckpt in the repository)
#   RL_BUFFER_DIR, LOG_DIR   trajectory store (default <repository>/rl_buffer), logs (<repository>/logs)
#   PORT, SERVED_MODEL_NAME (policy), RAY_PORT, RAY_DASHBOARD_PORT,
#   RAY_ADDRESS (the cluster to run on: its job API URL http://<head>:8265 or its GCS address
#   <head>:6379; default a head this script starts on 127.0.0.1:$RAY_PORT),
#   RAY_AUTH_MODE (token), TRAIN_GPUS (or ACTOR_GPUS), ROLLOUT_GPUS, PRM_GPUS (each a count, or a
#   list of ids such as "0,1,2,3": the train actors, the rollout engine and the PRM/teacher get
#   those devices; mapped onto --actor-num-gpus-per-node [--actor-gpu-ids], --rollout-num-gpus
#   [--rollout-gpu-ids], --prm-num-gpus [--prm-gpu-ids]), NUM_GPUS (GPUs of the head this script
#   starts; default their sum),
#   PYTHON, TRAIN_JOB_DRY_RUN (1: print the paths, the command and the job environment; submit nothing)
#   Every environment fallback of the trainer's flags (MAJORITY_VOTE_N, MAJORITY_VOTE_THRESHOLD,
#   PRM_MODEL_PATH, PRM_URL, JUDGE_MODEL_PATH, RESUME_CKPT, OPENCLAW_COMBINE_W_OPD, ...; the list:
#   python -m slime.config.run_args --env-names) is carried into the job's environment, where the
#   trainer reads it when the flag is not given (*_API_KEY variables excepted; see slime/config/run_args.py).
# Relative paths, in these variables or in any flag, are taken against the directory the script was
# run from (SLIME_CALLER_CWD in the job); the four paths above are printed absolute before the job starts.
# Flag groups, each replacing its default entirely when set:
#   CKPT_ARGS ROLLOUT_ARGS OPTIMIZER_ARGS RL_ARGS PRM_ARGS SERVE_ARGS LORA_ARGS EXTRA_ARGS,
#   METHOD_ARGS (a method folder's plugin flags). They come after --model-path $MODEL_PATH --save
#   $CKPT_SAVE_DIR (and --num-rollout 100000 for live traffic), so a group without them still runs;
#   arguments of the launch script come last (later flags win).
# Inside a Ray job (the script itself submitted with `ray job submit -- bash <script>`), the
# trainer runs directly on that job's cluster: no head is started and no nested job is submitted.
# The console: the script's own lines, the dashboard's address once the job's server is up and one
# line per train step (openclaw_rl/launch/progress.py, the same line as make run's); everything the
# job prints (Ray's and the libraries' log lines, the trainer's log, its summary) goes to the run's
# log file, $LOG_DIR/<job id>.log. TRAIN_JOB_CONSOLE=full shows the job's output on the console too.
# A finished job: the last line is "<script>: job <id> succeeded; full log: <file>".
# A failed job: the last line is "<script>: job <id> failed (exit N): slime/train.py: error: ..." (the
# trainer's one-line reason, e.g. which actor died in which step and how to resume).
# Stopping: Ctrl-C (or SIGTERM) stops the job (ray job stop: the trainer shuts the server and the
# judges down) and then the Ray head this script started, by its PID; a head that was already
# running is left alone.

LAUNCH_SCRIPT="$(basename "$0")"
LAUNCH_DIR="$(cd "$(dirname "$0")" && pwd)"
REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
METHOD_DIR="$(basename "$LAUNCH_DIR")"   # the launch script's folder, relative to the repository root
CALLER_DIR="$PWD"                        # relative paths mean relative to where the user ran the script

PYTHON=${PYTHON:-$REPO_DIR/.venv/bin/python}
[ -x "$PYTHON" ] || PYTHON=$(command -v python || command -v python3)
export PATH="$(dirname "$PYTHON"):$PATH"

# abs_path PATH: PATH made absolute against the caller's directory (no cd; the path need not exist)
abs_path() {
  case "$1" in
    "") echo "" ;;
    /*) realpath -m -- "$1" 2>/dev/null || echo "$1" ;;
    "~"*) realpath -m -- "${1/#\~/$HOME}" 2>/dev/null || echo "${1/#\~/$HOME}" ;;
    *) realpath -m -- "$CALLER_DIR/$1" 2>/dev/null || echo "$CALLER_DIR/$1" ;;
  esac
}

# gpu_count VALUE NAME: a count ("4") or a list of device ids ("0,1,2,3" -> 4)
gpu_count() {
  case "$1" in
    "") echo 0 ;;
    *[!0-9,\ ]*) echo "$LAUNCH_SCRIPT: $2 must be a GPU count or a list of ids like 0,1,2,3, got '$1'" >&2; return 2 ;;
    *,*) local ids; IFS=', ' read -r -a ids <<<"$1"; local n=0 i; for i in "${ids[@]}"; do [ -n "$i" ] && n=$((n + 1)); done; echo "$n" ;;
    *) echo "$1" ;;
  esac
}

HAS_GPU=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then HAS_GPU=1; fi
if [ -z "$MODEL_PATH" ]; then
  if [ "$HAS_GPU" = 1 ]; then
    echo "$LAUNCH_SCRIPT: set MODEL_PATH to your Qwen3-7B checkpoint folder" >&2; exit 2
  fi
  MODEL_PATH=builtin:smollm2-135m
fi
case "$MODEL_PATH" in *:*) ;; *) [ -e "$(abs_path "$MODEL_PATH")" ] && MODEL_PATH=$(abs_path "$MODEL_PATH") ;; esac
CKPT_SAVE_DIR=$(abs_path "${CKPT_SAVE_DIR:-$REPO_DIR/outputs/$METHOD_DIR/ckpt}")
RL_BUFFER_DIR=$(abs_path "${RL_BUFFER_DIR:-$REPO_DIR/rl_buffer}")
LOG_DIR=$(abs_path "${LOG_DIR:-$REPO_DIR/logs}")
if [ -n "$DATA_PATH" ]; then
  DATA_PATH=$(abs_path "$DATA_PATH")
  if [ ! -f "$DATA_PATH" ]; then echo "$LAUNCH_SCRIPT: DATA_PATH $DATA_PATH: no such file" >&2; exit 2; fi
fi
if [ -n "$HISTORY_PATH" ]; then
  HISTORY_PATH=$(abs_path "$HISTORY_PATH")
  (cd "$REPO_DIR" && "$PYTHON" -m openclaw_rl.rollout.history "$HISTORY_PATH" >/dev/null) 2>&1 \
    | sed "s|^|$LAUNCH_SCRIPT: |" >&2
  [ "${PIPESTATUS[0]}" = 0 ] || exit 2
fi
# gpu_ids VALUE: the ids of a list ("0, 1,2" -> "0,1,2"); nothing for a count
gpu_ids() {
  case "$1" in *,*) local ids; IFS=', ' read -r -a ids <<<"$1"; local IFS=,; echo "${ids[*]}" ;; esac
}
TRAIN_GPUS=${TRAIN_GPUS:-${ACTOR_GPUS:-$HAS_GPU}}   # ACTOR_GPUS: the seed FAQ's name
TRAIN_GPU_IDS=$(gpu_ids "$TRAIN_GPUS"); ROLLOUT_GPU_IDS=$(gpu_ids "${ROLLOUT_GPUS:-}"); PRM_GPU_IDS=$(gpu_ids "${PRM_GPUS:-}")
TRAIN_GPUS=$(gpu_count "$TRAIN_GPUS" TRAIN_GPUS) || exit 2
ROLLOUT_GPUS=$(gpu_count "${ROLLOUT_GPUS:-$HAS_GPU}" ROLLOUT_GPUS) || exit 2
PRM_GPUS=$(gpu_count "${PRM_GPUS:-0}" PRM_GPUS) || exit 2
NUM_GPUS=$(gpu_count "${NUM_GPUS:-$((TRAIN_GPUS + ROLLOUT_GPUS + PRM_GPUS))}" NUM_GPUS) || exit 2
if [ "$((TRAIN_GPUS + ROLLOUT_GPUS + PRM_GPUS))" -gt "$NUM_GPUS" ]; then
  echo "$LAUNCH_SCRIPT: TRAIN_GPUS ($TRAIN_GPUS) + ROLLOUT_GPUS ($ROLLOUT_GPUS) + PRM_GPUS ($PRM_GPUS) exceed NUM_GPUS ($NUM_GPUS)" >&2
  exit 2
fi
# the GPU layout as trainer flags (before the flag groups and the script's arguments, which win)
GPU_ARGS=""
[ "$TRAIN_GPUS" -gt 0 ] && GPU_ARGS="--actor-num-gpus-per-node $TRAIN_GPUS${TRAIN_GPU_IDS:+ --actor-gpu-ids $TRAIN_GPU_IDS}"
[ "$ROLLOUT_GPUS" -gt 0 ] && GPU_ARGS="$GPU_ARGS --rollout-num-gpus $ROLLOUT_GPUS${ROLLOUT_GPU_IDS:+ --rollout-gpu-ids $ROLLOUT_GPU_IDS}"
[ "$PRM_GPUS" -gt 0 ] && GPU_ARGS="$GPU_ARGS --prm-num-gpus $PRM_GPUS${PRM_GPU_IDS:+ --prm-gpu-ids $PRM_GPU_IDS}"
PORT=${PORT:-30000}
RAY_PORT=${RAY_PORT:-6379}
RAY_DASHBOARD_PORT=${RAY_DASHBOARD_PORT:-8265}
export SLIME_CALLER_CWD="$CALLER_DIR"

STARTED_RAY_HEAD_PID=""
SUBMIT_PID=""
HELPER_PIDS=""   # processes a launch script started for the job (a router, ...): stopped on exit, by PID
JOB_ID=""
JOB_API=""       # the job API URL of the cluster the job goes to (ensure_ray_head)
JOB_FINISHED=""
RUN_LOG=""       # the job's output (the run's log file)
PROGRESS_PID=""  # the console's step lines (openclaw_rl/launch/progress.py)
LIVE_NUM_ROLLOUT=100000   # --num-rollout of a live run: until stopped

# Find the cluster to run on and its job API address (JOB_API). RAY_ADDRESS as a job API URL
# (http://host:8265) or a GCS address (host:6379) names a running cluster; without it, or when it
# names this machine's default head (127.0.0.1:$RAY_PORT) and nothing answers there, the script
# starts a Ray head on loopback. Token authentication on: the token lives in ~/.ray/auth_token
# (generated once), and every ray command uses it. A head the script starts runs in the foreground
# of its own process (ray start --block), so this script stops exactly that one.
# ray_token_known: a Ray token is already where Ray looks for one (RAY_AUTH_TOKEN, the file
# RAY_AUTH_TOKEN_PATH names, else ~/.ray/auth_token), so `ray get-auth-token --generate` (a Python
# process, ~1.5 s of CPU) would only print it
ray_token_known() {
  [ -n "${RAY_AUTH_TOKEN:-}" ] || [ -s "${RAY_AUTH_TOKEN_PATH:-$HOME/.ray/auth_token}" ]
}

ensure_ray_head() {
  export RAY_AUTH_MODE=${RAY_AUTH_MODE:-token}
  if [ "$RAY_AUTH_MODE" = token ] && ! ray_token_known; then ray get-auth-token --generate >/dev/null; fi
  case "${RAY_ADDRESS:-}" in
    http://*|https://*|ray://*)
      JOB_API=$(cd "$REPO_DIR" && "$PYTHON" -m openclaw_rl.launch.job_address) || exit 2
      echo "$LAUNCH_SCRIPT: submitting to the Ray cluster at $JOB_API"
      return 0 ;;
  esac
  local default_address=127.0.0.1:$RAY_PORT
  export RAY_ADDRESS=${RAY_ADDRESS:-$default_address}
  # a closed port is known at once; connecting to it alone retries for about 40 s before saying so
  local gcs_host=${RAY_ADDRESS%:*} gcs_port=${RAY_ADDRESS##*:} gcs_open=1
  gcs_host=${gcs_host#[}; gcs_host=${gcs_host%]}
  case "$gcs_port" in
    ""|*[!0-9]*) ;;   # "auto" and the like: connecting decides
    *) timeout 3 bash -c "exec 3<>/dev/tcp/$gcs_host/$gcs_port" 2>/dev/null || gcs_open=0 ;;
  esac
  if [ "$gcs_open" = 1 ]; then
    # one connection finds the cluster and its job API (exit 3: no Ray cluster answers there)
    local found=0
    JOB_API=$(cd "$REPO_DIR" && "$PYTHON" -m openclaw_rl.launch.job_address) || found=$?
    case "$found" in
      0) echo "$LAUNCH_SCRIPT: submitting to the Ray cluster at $RAY_ADDRESS (job API $JOB_API)"
         return 0 ;;
      3) ;;
      *) exit 2 ;;   # job_address said why in one line
    esac
  fi
  case "$RAY_ADDRESS" in
    "$default_address"|"localhost:$RAY_PORT") ;;
    *) echo "$LAUNCH_SCRIPT: no Ray cluster answers at RAY_ADDRESS=$RAY_ADDRESS (unset it to start a local head)" >&2
       exit 2 ;;
  esac
  mkdir -p "$LOG_DIR"
  ray start --head --block --node-ip-address 127.0.0.1 --port "$RAY_PORT" --dashboard-host 127.0.0.1 \
    --dashboard-port "$RAY_DASHBOARD_PORT" --num-gpus "$NUM_GPUS" \
    --disable-usage-stats >"$LOG_DIR/ray-head.log" 2>&1 &
  STARTED_RAY_HEAD_PID=$!
  JOB_API=http://127.0.0.1:$RAY_DASHBOARD_PORT
  echo "$LAUNCH_SCRIPT: started a Ray head (pid $STARTED_RAY_HEAD_PID, $RAY_ADDRESS, log $LOG_DIR/ray-head.log)"
  "$PYTHON" - "$RAY_DASHBOARD_PORT" "$STARTED_RAY_HEAD_PID" <<'EOF' || { cat "$LOG_DIR/ray-head.log" >&2; exit 1; }
import os, sys, time, urllib.error, urllib.request
port, pid = sys.argv[1], int(sys.argv[2])
for _ in range(180):
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit("the Ray head exited")
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/api/version", timeout=2)
        sys.exit(0)
    except urllib.error.HTTPError:  # 401 with token auth: up
        sys.exit(0)
    except OSError:
        time.sleep(1)
sys.exit("the Ray head's dashboard did not answer within 180 s")
EOF
}

# On exit (normal end, error, Ctrl-C, SIGTERM): stop the job if it still runs, then the Ray head
# this script started (by PID: SIGTERM, then SIGKILL after 60 s).
_train_job_cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$JOB_ID" ] && [ -z "$JOB_FINISHED" ]; then
    echo "$LAUNCH_SCRIPT: stopping job $JOB_ID" >&2
    ray job stop --address "$JOB_API" "$JOB_ID" >/dev/null 2>&1 || true
    [ -n "$SUBMIT_PID" ] && kill -TERM "$SUBMIT_PID" 2>/dev/null
  elif [ -z "$JOB_ID" ] && [ -n "$SUBMIT_PID" ]; then   # inside a Ray job: the trainer is our child
    kill -TERM "$SUBMIT_PID" 2>/dev/null || true
  fi
  local p
  for p in $HELPER_PIDS; do kill -TERM "$p" 2>/dev/null || true; done
  # wait (up to 30 s) for the helpers to finish their own cleanup (a GUI pool kills its browsers)
  local helper_wait=0
  for p in $HELPER_PIDS; do
    while kill -0 "$p" 2>/dev/null && [ "$helper_wait" -lt 300 ]; do sleep 0.1; helper_wait=$((helper_wait + 1)); done
  done
  if [ -n "$STARTED_RAY_HEAD_PID" ] && kill -0 "$STARTED_RAY_HEAD_PID" 2>/dev/null; then
    echo "$LAUNCH_SCRIPT: stopping the Ray head it started (pid $STARTED_RAY_HEAD_PID)" >&2
    kill -TERM "$STARTED_RAY_HEAD_PID" 2>/dev/null
    local waited=0
    while kill -0 "$STARTED_RAY_HEAD_PID" 2>/dev/null && [ "$waited" -lt 60 ]; do sleep 1; waited=$((waited + 1)); done
    kill -KILL "$STARTED_RAY_HEAD_PID" 2>/dev/null || true
  fi
  exit "$rc"
}

# Submit slime/train.py with the flag groups, the method's flags and the script's arguments.
submit_train_job() {
  local serve_default="--rl-buffer-dir $RL_BUFFER_DIR --log-dir $LOG_DIR"
  local base="--model-path $MODEL_PATH --save $CKPT_SAVE_DIR $GPU_ARGS${HISTORY_PATH:+ --history-path $HISTORY_PATH}"
  if [ -n "$DATA_PATH" ]; then   # offline: no server is started, so no server-side flags; one pass by default
    serve_default="$serve_default --data-path $DATA_PATH"
  else
    serve_default="--port $PORT --served-model-name ${SERVED_MODEL_NAME:-policy} $serve_default"
    base="$base --num-rollout $LIVE_NUM_ROLLOUT"
  fi
  local ckpt=${CKPT_ARGS:-"--save-interval 10"}
  local rollout=${ROLLOUT_ARGS:-"--rollout-batch-size 16 --num-rollouts-per-prompt 1 \
    --rollout-max-response-len 1024 --rollout-temperature 1.0 --max-staleness 4"}
  local optimizer=${OPTIMIZER_ARGS:-"--lr 1e-6 --weight-decay 0.1 --adam-beta1 0.9 --adam-beta2 0.98"}
  local rl=${RL_ARGS:-"--advantage-estimator broadcast --eps-clip 0.2 --eps-clip-high 0.28 --use-tis --tis-cap 2.0"}
  local judges=${PRM_ARGS:-"--num-judge-workers 2"}
  local serve=${SERVE_ARGS:-$serve_default}
  local runtime_env
  runtime_env=$(cd "$REPO_DIR" && "$PYTHON" -m slime.config.run_args --runtime-env) || exit 2
  echo "$LAUNCH_SCRIPT: MODEL_PATH=$MODEL_PATH"
  echo "$LAUNCH_SCRIPT: CKPT_SAVE_DIR=$CKPT_SAVE_DIR"
  echo "$LAUNCH_SCRIPT: RL_BUFFER_DIR=$RL_BUFFER_DIR"
  echo "$LAUNCH_SCRIPT: LOG_DIR=$LOG_DIR"
  [ -n "$DATA_PATH" ] && echo "$LAUNCH_SCRIPT: DATA_PATH=$DATA_PATH"
  [ -n "$HISTORY_PATH" ] && echo "$LAUNCH_SCRIPT: HISTORY_PATH=$HISTORY_PATH (at most ${HISTORY_MAX_TURNS:-256} turns, the most recent first)"
  # shellcheck disable=SC2086  # the groups are word lists
  set -- $base $ckpt $rollout $optimizer $rl $judges $serve ${METHOD_ARGS:-} ${LORA_ARGS:-} ${EXTRA_ARGS:-} "$@"
  if [ -n "$TRAIN_JOB_DRY_RUN" ]; then
    echo "TRAIN_JOB_ARGV=$("$PYTHON" -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@")"
    echo "TRAIN_JOB_RUNTIME_ENV=$runtime_env"
    echo "TRAIN_JOB_NUM_GPUS=$NUM_GPUS"
    return 0
  fi
  trap _train_job_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  cd "$REPO_DIR"
  if [ -n "${RAY_JOB_CONFIG_JSON_ENV_VAR:-}" ]; then
    # already a Ray job's entrypoint: train on this cluster (Ray set RAY_ADDRESS to it), no nested job
    echo "$LAUNCH_SCRIPT: running inside a Ray job: training on its cluster ($RAY_ADDRESS)"
    local rc=0
    "$PYTHON" slime/train.py "$@" &
    SUBMIT_PID=$!
    wait "$SUBMIT_PID" || rc=$?
    return "$rc"
  fi
  ensure_ray_head
  JOB_ID="openclaw-$METHOD_DIR-$(date +%Y%m%d-%H%M%S)-$$"
  RUN_LOG="$LOG_DIR/$JOB_ID.log"
  mkdir -p "$LOG_DIR"
  : >"$RUN_LOG"
  echo "$LAUNCH_SCRIPT: job $JOB_ID; Ray's and the trainer's log: $RUN_LOG"
  "$PYTHON" -m openclaw_rl.launch.progress --log-dir "$LOG_DIR" --run-log "$RUN_LOG" --since "$(date +%s)" \
    --open-ended-steps "$LIVE_NUM_ROLLOUT" -- "$@" &
  PROGRESS_PID=$!
  HELPER_PIDS="$HELPER_PIDS $PROGRESS_PID"   # stopped on exit with the other helpers
  local rc=0
  # A head that has just started answers before its job agent is up ("No available agent to
  # submit job", and no job is created): retry that, and only that, for up to a minute.
  local attempt offset
  for attempt in $(seq 1 20); do
    rc=0
    offset=$(stat -c %s "$RUN_LOG")
    # in the background, so a signal to this script is handled at once (a trap waits for a foreground child);
    # appending (>>): forget may rewrite the log in place (openclaw_rl/capture/forget.py)
    if [ "${TRAIN_JOB_CONSOLE:-steps}" = full ]; then
      ray job submit --address "$JOB_API" --working-dir "$REPO_DIR" \
        --submission-id "$JOB_ID" --runtime-env-json "$runtime_env" -- python slime/train.py "$@" \
        > >(tee -a "$RUN_LOG") 2> >(tee -a "$RUN_LOG" >&2) &
    else
      ray job submit --address "$JOB_API" --working-dir "$REPO_DIR" \
        --submission-id "$JOB_ID" --runtime-env-json "$runtime_env" -- python slime/train.py "$@" \
        >>"$RUN_LOG" 2>&1 &
    fi
    SUBMIT_PID=$!
    wait "$SUBMIT_PID" || rc=$?
    if [ "$rc" != 0 ] && tail -c +"$((offset + 1))" "$RUN_LOG" | grep -q "No available agent to submit job"; then
      echo "$LAUNCH_SCRIPT: the cluster's job agent is not up yet; retrying ($attempt/20)" >&2
      sleep 3
      continue
    fi
    break
  done
  JOB_FINISHED=1
  { kill -TERM "$PROGRESS_PID" 2>/dev/null && wait "$PROGRESS_PID" 2>/dev/null; } || true   # its last lines first
  if [ "$rc" != 0 ]; then  # Ray repeats the job's last logs after "failed": end on the trainer's own line
    local why
    why=$(ray job logs --address "$JOB_API" "$JOB_ID" 2>/dev/null \
      | grep -E '^slime/train.py: (error|stopped)' | tail -n 1)
    echo "$LAUNCH_SCRIPT: job $JOB_ID failed (exit $rc)${why:+: $why}" >&2
  else
    echo "$LAUNCH_SCRIPT: job $JOB_ID succeeded; full log: $RUN_LOG"
  fi
  return "$rc"
}
