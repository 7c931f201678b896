#!/usr/bin/env bash
# swe-rl: repository repair (SWE-bench instances) in sandboxed per-episode repository copies (Track 2).
#
#   ENV_TYPE=swe SWE_BENCH_PATH=/path/to/swe-bench PARALLEL_ENVS=8 bash swe-rl/run_swe_rl.sh
#
# Every episode gets a fresh copy-on-write bubblewrap sandbox holding the instance's repository; the
# model acts mini-swe-agent style (one bash block per reply, SWE_CONFIG_PATH's templates, submission
# with `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`); the submitted patch (else the repository's
# diff) is applied to a fresh copy and the instance's eval script run: reward +1 resolved, -1 not,
# plus the step PRM with PRM_ENABLE=1 (scripts/run_swe_rl_8b_prm.sh). Every step goes through the
# intercept server, so the trained ids and logprobs are the sampled ones.
#
# Environment (besides openclaw_rl/launch/train_job.sh's MODEL_PATH, CKPT_SAVE_DIR, ROLLOUT_ARGS,
# OPTIMIZER_ARGS, LORA_ARGS, TRAIN_GPUS, ROLLOUT_GPUS, PORT, ...):
#   ENV_TYPE              swe (the only value this script takes)
#   SWE_BENCH_PATH        SWE-bench instances: a JSONL / JSON file, or a folder with swe_train.jsonl
#                         (default: the inspect-evals ipi repositories converted once into
#                         $OPENCLAW_RL_CACHE/swe, training split); PROMPT_DATA names prompt rows directly
#   PARALLEL_ENVS         episodes run at once in the job (default 8; CPU: 2)
#   SWE_STEP_LIMIT        model replies per episode (default 30; CPU: 3; MAX_STEPS is read too)
#   SWE_CONFIG_PATH       a mini-swe-agent YAML config (default: the package's swebench_backticks.yaml)
#   SWE_ROLLOUT_TIMEOUT   wall-clock seconds of an episode's steps (default none)
#   SWE_SAVE_TRAJ_DIR     write each episode's trajectory there as JSON
#   SWE_ENV_SERVER_URL    a SWE pool server to lease containers from (default: containers in the job)
#   SWE_EXEC_SERVER_URLS  comma-separated exec servers: the script starts a pool server in front of them
#                         on SWE_ENV_SERVER_PORT (default 18090) and uses it as SWE_ENV_SERVER_URL
#   SWE_MAX_CONCURRENT    leases of that pool server / containers of the job (default PARALLEL_ENVS)
#   NUM_ROLLOUT           training steps (default 3 on CPU with the embedded model, else 1000)
#   PRM_ENABLE, PRM_MODEL_PATH, PRM_M, PRM_STEP_COEF   the step PRM
set -e
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../openclaw_rl/launch/train_job.sh"
source "$REPO_DIR/openclaw_rl/launch/agent_job.sh"
require_env_type swe
export PARALLEL_ENVS=${PARALLEL_ENVS:-$([ "$CPU_RUN" = 1 ] && echo 2 || echo 8)}
export SWE_STEP_LIMIT=${SWE_STEP_LIMIT:-${MAX_STEPS:-$([ "$CPU_RUN" = 1 ] && echo 3 || echo 30)}}
export SWE_MAX_CONCURRENT=${SWE_MAX_CONCURRENT:-$PARALLEL_ENVS}
case "$SWE_STEP_LIMIT$PARALLEL_ENVS$SWE_MAX_CONCURRENT" in
  *[!0-9]*) echo "$LAUNCH_SCRIPT: SWE_STEP_LIMIT, PARALLEL_ENVS and SWE_MAX_CONCURRENT must be integers" >&2; exit 2 ;;
esac
[ -n "$SWE_CONFIG_PATH" ] && export SWE_CONFIG_PATH=$(abs_path "$SWE_CONFIG_PATH")
[ -n "$SWE_SAVE_TRAJ_DIR" ] && export SWE_SAVE_TRAJ_DIR=$(abs_path "$SWE_SAVE_TRAJ_DIR")
if [ -z "$PROMPT_DATA" ]; then
  if [ -n "$SWE_BENCH_PATH" ]; then
    mkdir -p "$LOG_DIR"
    PROMPT_DATA="$LOG_DIR/swe_prompts_train.jsonl"
    (cd "$REPO_DIR" && "$PYTHON" -m openclaw_rl.envs.swe.data prompts "$(abs_path "$SWE_BENCH_PATH")" \
      --split train --out "$PROMPT_DATA" >/dev/null) || exit 2
  else
    PROMPT_DATA=$(cd "$REPO_DIR" && "$PYTHON" -m openclaw_rl.agentic.families train swe) || exit 2
  fi
fi
PROMPT_DATA=$(abs_path "$PROMPT_DATA")
[ -f "$PROMPT_DATA" ] || { echo "$LAUNCH_SCRIPT: PROMPT_DATA $PROMPT_DATA: no such file" >&2; exit 2; }
NUM_ROLLOUT=${NUM_ROLLOUT:-$([ "$CPU_RUN" = 1 ] && echo 3 || echo 1000)}

if [ -n "$SWE_EXEC_SERVER_URLS" ] && [ -z "$SWE_ENV_SERVER_URL" ] && [ -z "$TRAIN_JOB_DRY_RUN" ]; then
  SWE_ENV_SERVER_PORT=${SWE_ENV_SERVER_PORT:-18090}
  mkdir -p "$LOG_DIR"
  rm -f "$LOG_DIR/swe_pool.port"   # SWE_ENV_SERVER_PORT=0: the pool binds a free port and writes it here
  (cd "$REPO_DIR" && exec "$PYTHON" -m openclaw_rl.envs.swe.pool_server --port "$SWE_ENV_SERVER_PORT" \
    --port-file "$LOG_DIR/swe_pool.port" --max-envs "$SWE_MAX_CONCURRENT" --exec-server-urls "$SWE_EXEC_SERVER_URLS") \
    >"$LOG_DIR/swe_pool.log" 2>&1 &
  SWE_POOL_PID=$!
  HELPER_PIDS="$HELPER_PIDS $SWE_POOL_PID"
  trap _train_job_cleanup EXIT
  SWE_ENV_SERVER_URL=$(cd "$REPO_DIR" && "$PYTHON" -m openclaw_rl.launch.wait_pool --name "$LAUNCH_SCRIPT: the SWE pool server" \
    --pid "$SWE_POOL_PID" --port-file "$LOG_DIR/swe_pool.port" --timeout 60 --log "$LOG_DIR/swe_pool.log") || exit 1
  export SWE_ENV_SERVER_URL
  echo "$LAUNCH_SCRIPT: SWE pool server on $SWE_ENV_SERVER_URL (pid $SWE_POOL_PID) in front of $SWE_EXEC_SERVER_URLS"
fi
echo "$LAUNCH_SCRIPT: PROMPT_DATA=$PROMPT_DATA SWE_STEP_LIMIT=$SWE_STEP_LIMIT PARALLEL_ENVS=$PARALLEL_ENVS"

agent_job_defaults generate.py \
  "--rollout-batch-size 16 --n-samples-per-prompt 8 --rollout-max-response-len 4096 --rollout-max-context-len 32768 --rollout-temperature 1.0" \
  "--rollout-batch-size 2 --n-samples-per-prompt 2 --rollout-max-response-len 96 --rollout-max-context-len 6144 --rollout-temperature 1.0"
submit_train_job "$@"
