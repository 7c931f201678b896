#!/usr/bin/env bash
# Combine (the recommended default): Binary RL and on-policy distillation on the same turns.
# Per main turn, the PRM votes +1/-1/0 and the hint judge accepts (with a hint) or rejects:
#   hint accepted + verdict +-1 -> both signals;  hint accepted + verdict 0 -> OPD only;
#   hint rejected + verdict +-1 -> Binary RL only; neither -> no sample.
# A_t = w_opd * A_opd,t / rms(A_opd) + w_rl * r / rms(r), each branch normalised over its own tokens.
#
# Same environment as ../openclaw-rl/run_qwen3_7b_openclaw_rl.sh (openclaw_rl/launch/train_job.sh:
# MODEL_PATH, PRM_MODEL_PATH, DATA_PATH, CKPT_SAVE_DIR, the *_ARGS groups, MAJORITY_VOTE_N,
# MAJORITY_VOTE_THRESHOLD, PORT, RAY_PORT, ...), plus JUDGE_MODEL_PATH, JUDGE_URL,
# JUDGE_MODEL_NAME, OPD_TEACHER, OPD_ADV_CLIP (see ../openclaw-opd) and
#   OPENCLAW_COMBINE_W_OPD   weight of the OPD branch (default 1.0)
#   OPENCLAW_COMBINE_W_RL    weight of the Binary RL branch (default 1.0)
set -e
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../openclaw_rl/launch/train_job.sh"

RL_ARGS=${RL_ARGS:-"--advantage-estimator combine --opd-teacher ${OPD_TEACHER:-base} \
  --eps-clip 0.2 --eps-clip-high 0.28 --use-tis --tis-cap 2.0${OPD_ADV_CLIP:+ --opd-adv-clip $OPD_ADV_CLIP}\
${JUDGE_URL:+ --judge-url $JUDGE_URL}${JUDGE_MODEL_NAME:+ --judge-model-name $JUDGE_MODEL_NAME}"}
submit_train_job "$@"
