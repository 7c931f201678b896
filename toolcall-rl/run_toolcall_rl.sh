#!/usr/bin/env bash
# toolcall-rl: ReTool-style math with a Python code interpreter (Track 2).
#
#   ENV_TYPE=toolcall TOOLS_CONFIG=./toolcall-rl/tools_config.json PARALLEL_ENVS=64 bash toolcall-rl/run_toolcall_rl.sh
#
# The job serves the policy on $PORT, and each step draws --rollout-batch-size problems from
# PROMPT_DATA; every problem gets --n-samples-per-prompt episodes: the model calls
# code_interpreter (run in the bubblewrap sandbox), reads the <interpreter> output, and boxes its
# answer; every step goes through the intercept server, so the trained ids and logprobs are the
# sampled ones. Reward: answer correctness (+ tool-use shaping for wrong answers), GRPO by default;
# PRM_ENABLE=1 adds the step PRM with the step-wise estimator (retool_qwen3_4b_prm_rl.sh).
#
# Environment (besides openclaw_rl/launch/train_job.sh's MODEL_PATH, CKPT_SAVE_DIR, ROLLOUT_ARGS,
# OPTIMIZER_ARGS, LORA_ARGS, TRAIN_GPUS, ROLLOUT_GPUS, PORT, ...):
#   ENV_TYPE        toolcall (the only value this script takes)
#   TOOLS_CONFIG    tool limits (max_turns, tool_concurrency, python_timeout, python_memory_limit);
#                   TOOL_CONFIGS is read too (upstream's name); default toolcall-rl/tools_config.json
#   PARALLEL_ENVS   episodes run at once (default 8; CPU: 4)
#   PROMPT_DATA     JSONL {"prompt", "label", "metadata"} (default: GSM-Symbolic training instances,
#                   generated once into $OPENCLAW_RL_CACHE/data/math_tool)
#   ENV_SERVER_URL / WORKER_URLS   run the environments on pool servers (default: in the job)
#   NUM_ROLLOUT     training steps (default 3 on CPU with the embedded model, else 3000)
#   PRM_ENABLE, PRM_MODEL_PATH, PRM_M, PRM_STEP_COEF   the step PRM
set -e
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../openclaw_rl/launch/train_job.sh"
source "$REPO_DIR/openclaw_rl/launch/agent_job.sh"

require_env_type toolcall
TOOLS_CONFIG=$(abs_path "${TOOLS_CONFIG:-${TOOL_CONFIGS:-$LAUNCH_DIR/tools_config.json}}")
[ -f "$TOOLS_CONFIG" ] || { echo "$LAUNCH_SCRIPT: TOOLS_CONFIG $TOOLS_CONFIG: no such file" >&2; exit 2; }
export TOOLS_CONFIG
export PARALLEL_ENVS=${PARALLEL_ENVS:-$([ "$CPU_RUN" = 1 ] && echo 4 || echo 8)}
if [ -z "$PROMPT_DATA" ]; then
  PROMPT_DATA=$(cd "$REPO_DIR" && "$PYTHON" -m openclaw_rl.agentic.families train math-tool) || exit 2
fi
PROMPT_DATA=$(abs_path "$PROMPT_DATA")
[ -f "$PROMPT_DATA" ] || { echo "$LAUNCH_SCRIPT: PROMPT_DATA $PROMPT_DATA: no such file" >&2; exit 2; }
NUM_ROLLOUT=${NUM_ROLLOUT:-$([ "$CPU_RUN" = 1 ] && echo 3 || echo 3000)}
echo "$LAUNCH_SCRIPT: PROMPT_DATA=$PROMPT_DATA TOOLS_CONFIG=$TOOLS_CONFIG PARALLEL_ENVS=$PARALLEL_ENVS"

agent_job_defaults generate_with_retool.py \
  "--rollout-batch-size 32 --n-samples-per-prompt 8 --rollout-max-response-len 8192 --rollout-max-context-len 16384 --rollout-temperature 1.0" \
  "--rollout-batch-size 2 --n-samples-per-prompt 2 --rollout-max-response-len 96 --rollout-max-context-len 2048 --rollout-temperature 1.0"
submit_train_job "$@"
