#!/usr/bin/env bash
# On-policy distillation (OPD) with hindsight hints on live OpenClaw conversations: a hint judge
# reads each main turn's next state and, when it shows how the turn should have gone, writes a
# 1-3 sentence hint; the same model with the hint appended to the last user message is the
# teacher; A_t = log p_teacher(y_t) - log p_old(y_t) on the student's own tokens; PPO clipped loss.
#
# Same environment as ../openclaw-rl/run_qwen3_7b_openclaw_rl.sh (openclaw_rl/launch/train_job.sh:
# MODEL_PATH, DATA_PATH, CKPT_SAVE_DIR, the *_ARGS groups, PORT, RAY_PORT, MAJORITY_VOTE_N, ...),
# plus:
#   JUDGE_MODEL_PATH   hint-judge model (default: the policy's base model)
#   JUDGE_URL          use an OpenAI-compatible endpoint as hint judge instead (JUDGE_MODEL_NAME)
#   OPD_TEACHER        base (frozen base weights, default) or live (the current policy)
#   OPD_ADV_CLIP       clip |A_t| to this value (default: no clip)
#   DISTILL_TOPK       train with reverse KL over the teacher's top-K tokens + a tail bin
#   RL_ARGS / PRM_ARGS replace the method / judge flags below entirely
set -e
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../openclaw_rl/launch/train_job.sh"

RL_ARGS=${RL_ARGS:-"--advantage-estimator opd --opd-teacher ${OPD_TEACHER:-base} --eps-clip 0.2 \
  --eps-clip-high 0.28 --use-tis --tis-cap 2.0${OPD_ADV_CLIP:+ --opd-adv-clip $OPD_ADV_CLIP}\
${DISTILL_TOPK:+ --distill-topk $DISTILL_TOPK}${JUDGE_URL:+ --judge-url $JUDGE_URL}\
${JUDGE_MODEL_NAME:+ --judge-model-name $JUDGE_MODEL_NAME}"}
submit_train_job "$@"
