#!/usr/bin/env bash
# terminal-rl: shell tasks (AgentBench OS) in the bubblewrap sandbox (Track 2).
#
#   ENV_TYPE=terminal MAX_STEPS=20 PARALLEL_ENVS=32 bash terminal-rl/run_terminal_rl.sh
#
# Every episode gets a fresh copy-on-write sandbox with the task's setup run in it; the model acts
# with shell_exec / shell_write_content_to_file / shell_interactive (and answers with the answer
# tool where the task asks a question); the task's checks score it (reward 2*acc - 1), plus the
# step PRM with PRM_ENABLE=1 (terminal_qwen3_8b_prm_rl.sh). Every step goes through the intercept
# server, so the trained ids and logprobs are the sampled ones.
#
# Environment (besides openclaw_rl/launch/train_job.sh's MODEL_PATH, CKPT_SAVE_DIR, ROLLOUT_ARGS,
# OPTIMIZER_ARGS, LORA_ARGS, TRAIN_GPUS, ROLLOUT_GPUS, PORT, ...):
#   ENV_TYPE        terminal (the only value this script takes)
#   MAX_STEPS       model replies per episode (default 20; CPU: 4)
#   PARALLEL_ENVS   episodes run at once (default 32; CPU: 4)
#   DATASET_DIR     folder with train.jsonl (default: the AgentBench OS tasks converted once into
#                   $OPENCLAW_RL_CACHE/data/terminal); PROMPT_DATA names a file directly
#   ENV_SERVER_URL  a pool server or router to run the environments on (default: in the job)
#   WORKER_URLS     comma-separated pool workers: the script starts a router in front of them on
#                   ROUTER_PORT (default 18081) and uses it as ENV_SERVER_URL
#   NUM_ROLLOUT     training steps (default 3 on CPU with the embedded model, else 1000)
#   PRM_ENABLE, PRM_MODEL_PATH, PRM_M, PRM_STEP_COEF   the step PRM
set -e
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../openclaw_rl/launch/train_job.sh"
source "$REPO_DIR/openclaw_rl/launch/agent_job.sh"

require_env_type terminal
export MAX_STEPS=${MAX_STEPS:-$([ "$CPU_RUN" = 1 ] && echo 4 || echo 20)}
export PARALLEL_ENVS=${PARALLEL_ENVS:-$([ "$CPU_RUN" = 1 ] && echo 4 || echo 32)}
case "$MAX_STEPS$PARALLEL_ENVS" in *[!0-9]*) echo "$LAUNCH_SCRIPT: MAX_STEPS and PARALLEL_ENVS must be integers" >&2; exit 2 ;; esac
if [ -z "$PROMPT_DATA" ]; then
  if [ -n "$DATASET_DIR" ]; then
    PROMPT_DATA=$(abs_path "$DATASET_DIR")/train.jsonl
  else
    PROMPT_DATA=$(cd "$REPO_DIR" && "$PYTHON" -m openclaw_rl.agentic.families train terminal) || exit 2
  fi
fi
PROMPT_DATA=$(abs_path "$PROMPT_DATA")
[ -f "$PROMPT_DATA" ] || { echo "$LAUNCH_SCRIPT: PROMPT_DATA $PROMPT_DATA: no such file" >&2; exit 2; }
NUM_ROLLOUT=${NUM_ROLLOUT:-$([ "$CPU_RUN" = 1 ] && echo 3 || echo 1000)}

ROUTER_PID=""
if [ -n "$WORKER_URLS" ] && [ -z "$ENV_SERVER_URL" ] && [ -z "$TRAIN_JOB_DRY_RUN" ]; then
  ROUTER_PORT=${ROUTER_PORT:-18081}
  mkdir -p "$LOG_DIR"
  "$PYTHON" -m openclaw_rl.agentic.router --port "$ROUTER_PORT" --worker-urls "$WORKER_URLS" \
    >"$LOG_DIR/router.log" 2>&1 &
  ROUTER_PID=$!
  HELPER_PIDS="$HELPER_PIDS $ROUTER_PID"
  trap _train_job_cleanup EXIT
  export ENV_SERVER_URL="http://127.0.0.1:$ROUTER_PORT"
  echo "$LAUNCH_SCRIPT: router on $ENV_SERVER_URL (pid $ROUTER_PID) in front of $WORKER_URLS"
fi
echo "$LAUNCH_SCRIPT: PROMPT_DATA=$PROMPT_DATA MAX_STEPS=$MAX_STEPS PARALLEL_ENVS=$PARALLEL_ENVS"

agent_job_defaults generate.py \
  "--rollout-batch-size 16 --n-samples-per-prompt 8 --rollout-max-response-len 4096 --rollout-max-context-len 32768 --rollout-temperature 1.0" \
  "--rollout-batch-size 2 --n-samples-per-prompt 2 --rollout-max-response-len 96 --rollout-max-context-len 3072 --rollout-temperature 1.0"
submit_train_job "$@"
