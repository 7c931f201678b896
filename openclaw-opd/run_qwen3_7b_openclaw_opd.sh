#!/usr/bin/env bash
# On-policy distillation (OPD) with hindsight hints on live OpenClaw conversations: a hint judge
# reads each main turn's next state and, when it shows how the turn should have gone, writes a
# 1-3 sentence hint; the same model with the hint appended to the last user message is the
# teacher; A_t = log p_teacher(y_t) - log p_old(y_t) on the student's own tokens; PPO clipped loss.
#
# Same env vars as ../openclaw-rl/run_qwen3_7b_openclaw_rl.sh (MODEL_PATH, DATA_PATH, CKPT_SAVE_DIR,
# CKPT_ARGS, ROLLOUT_ARGS, OPTIMIZER_ARGS, SERVE_ARGS, LORA_ARGS, EXTRA_ARGS, PORT, RAY_PORT, ...),
# plus:
#   JUDGE_MODEL_PATH   hint-judge model (default: the policy's base model)
#   JUDGE_URL          use an OpenAI-compatible endpoint as hint judge instead (JUDGE_MODEL_NAME)
#   OPD_TEACHER        base (frozen base weights, default) or live (the current policy)
#   OPD_ADV_CLIP       clip |A_t| to this value (default: no clip)
#   DISTILL_TOPK       train with reverse KL over the teacher's top-K tokens + a tail bin
#   MAJORITY_VOTE_N    hint-judge votes per turn (default 1)
#   RL_ARGS / PRM_ARGS replace the method / judge flags below entirely
set -e
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$SCRIPT_DIR/.." && pwd)"

OPD_TEACHER=${OPD_TEACHER:-base}
MAJORITY_VOTE_N=${MAJORITY_VOTE_N:-1}
export CKPT_SAVE_DIR=${CKPT_SAVE_DIR:-$REPO_DIR/outputs/openclaw-opd/ckpt}
export RL_ARGS=${RL_ARGS:-"--advantage-estimator opd --opd-teacher $OPD_TEACHER --eps-clip 0.2 \
  --eps-clip-high 0.28 --use-tis --tis-cap 2.0${OPD_ADV_CLIP:+ --opd-adv-clip $OPD_ADV_CLIP}\
${DISTILL_TOPK:+ --distill-topk $DISTILL_TOPK}"}
export PRM_ARGS=${PRM_ARGS:-"--majority-vote-n $MAJORITY_VOTE_N --num-judge-workers 2\
${JUDGE_MODEL_PATH:+ --judge-model-path $JUDGE_MODEL_PATH}${JUDGE_URL:+ --judge-url $JUDGE_URL}\
${JUDGE_MODEL_NAME:+ --judge-model-name $JUDGE_MODEL_NAME}"}
exec bash "$REPO_DIR/openclaw-rl/run_qwen3_7b_openclaw_rl.sh" "$@"
