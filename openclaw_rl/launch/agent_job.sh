# Shared by the Track 2 launch scripts (source it after train_job.sh): the defaults every agent
# family sets the same way. A family script checks ENV_TYPE (require_env_type NAME), finds
# PROMPT_DATA, then calls
#   agent_job_defaults PLUGIN_FILE "GPU ROLLOUT_ARGS" "CPU ROLLOUT_ARGS"
# which fills, when the caller has not set them: ROLLOUT_ARGS (the CPU set with the embedded
# model and no GPU), OPTIMIZER_ARGS on CPU, RL_ARGS (GRPO on the outcome; with PRM_ENABLE=1 the
# step PRM and --advantage-estimator step_wise), and METHOD_ARGS (the prompt data, the family's
# generate/reward plugin file with --reward-key score, --num-rollout $NUM_ROLLOUT).

# what every family's plugins read in the job (a submitted job does not inherit this shell's
# environment): the environment pool's settings; require_env_type adds the family's own
export SLIME_JOB_ENV="${SLIME_JOB_ENV:-} PARALLEL_ENVS ENV_SERVER_URL WORKER_URLS"

if [ "$MODEL_PATH" = builtin:smollm2-135m ] && [ "$HAS_GPU" = 0 ]; then CPU_RUN=1; else CPU_RUN=0; fi

# ENV_TYPE defaults to NAME; any other value is a one-line error (exit 2). Then the variables the
# family's job reads (its flags' environment fallbacks and its job_env, from the family class:
# python -m openclaw_rl.agentic.families job-env NAME) join SLIME_JOB_ENV.
require_env_type() {
  ENV_TYPE=${ENV_TYPE:-$1}
  if [ "$ENV_TYPE" != "$1" ]; then
    echo "$LAUNCH_SCRIPT: ENV_TYPE must be $1 for this script, got '$ENV_TYPE'" >&2; exit 2
  fi
  local family_env
  family_env=$(cd "$REPO_DIR" && "$PYTHON" -m openclaw_rl.agentic.families job-env "$1") || exit 2
  export SLIME_JOB_ENV="$SLIME_JOB_ENV $family_env"
}

agent_job_defaults() {
  local plugin=$1 gpu_rollout=$2 cpu_rollout=$3
  if [ "$CPU_RUN" = 1 ]; then
    ROLLOUT_ARGS=${ROLLOUT_ARGS:-$cpu_rollout}
    OPTIMIZER_ARGS=${OPTIMIZER_ARGS:-"--lr 1e-5 --weight-decay 0.0"}
  else
    ROLLOUT_ARGS=${ROLLOUT_ARGS:-$gpu_rollout}
  fi
  if [ -n "$PRM_ENABLE" ] && [ "$PRM_ENABLE" != 0 ]; then
    RL_ARGS=${RL_ARGS:-"--advantage-estimator step_wise --prm-enable --eps-clip 0.2 --eps-clip-high 0.28$([ "$CPU_RUN" = 1 ] && echo " --prm-max-new-tokens 16" || true)"}
  else
    RL_ARGS=${RL_ARGS:-"--advantage-estimator grpo --eps-clip 0.2 --eps-clip-high 0.28"}
  fi
  METHOD_ARGS="--prompt-data $PROMPT_DATA --input-key prompt --label-key label --metadata-key metadata \
    --custom-generate-function-path $LAUNCH_DIR/$plugin:generate \
    --custom-rm-path $LAUNCH_DIR/$plugin:reward_func --reward-key score \
    --num-rollout $NUM_ROLLOUT ${METHOD_ARGS:-}"
}
