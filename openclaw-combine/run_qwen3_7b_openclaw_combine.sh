#!/usr/bin/env bash
# Combine (the recommended default): Binary RL and on-policy distillation on the same turns.
# Per main turn, the PRM votes +1/-1/0 and the hint judge accepts (with a hint) or rejects:
#   hint accepted + verdict +-1 -> both signals;  hint accepted + verdict 0 -> OPD only;
#   hint rejected + verdict +-1 -> Binary RL only; neither -> no sample.
# A_t = w_opd * A_opd,t / rms(A_opd) + w_rl * r / rms(r), each branch normalised over its own tokens.
#
# Same env vars as ../openclaw-rl/run_qwen3_7b_openclaw_rl.sh (MODEL_PATH, PRM_MODEL_PATH,
# DATA_PATH, CKPT_SAVE_DIR, CKPT_ARGS, ROLLOUT_ARGS, OPTIMIZER_ARGS, SERVE_ARGS, LORA_ARGS,
# EXTRA_ARGS, MAJORITY_VOTE_N, MAJORITY_VOTE_THRESHOLD, PORT, RAY_PORT, ...), plus JUDGE_MODEL_PATH,
# JUDGE_URL, JUDGE_MODEL_NAME, OPD_TEACHER, OPD_ADV_CLIP (see ../openclaw-opd) and
#   OPENCLAW_COMBINE_W_OPD   weight of the OPD branch (default 1.0)
#   OPENCLAW_COMBINE_W_RL    weight of the Binary RL branch (default 1.0)
set -e
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$SCRIPT_DIR/.." && pwd)"

OPD_TEACHER=${OPD_TEACHER:-base}
MAJORITY_VOTE_N=${MAJORITY_VOTE_N:-1}
MAJORITY_VOTE_THRESHOLD=${MAJORITY_VOTE_THRESHOLD:-0.5}
export CKPT_SAVE_DIR=${CKPT_SAVE_DIR:-$REPO_DIR/outputs/openclaw-combine/ckpt}
export RL_ARGS=${RL_ARGS:-"--advantage-estimator combine --opd-teacher $OPD_TEACHER \
  --combine-w-opd ${OPENCLAW_COMBINE_W_OPD:-1.0} --combine-w-rl ${OPENCLAW_COMBINE_W_RL:-1.0} \
  --eps-clip 0.2 --eps-clip-high 0.28 --use-tis --tis-cap 2.0${OPD_ADV_CLIP:+ --opd-adv-clip $OPD_ADV_CLIP}"}
export PRM_ARGS=${PRM_ARGS:-"--majority-vote-n $MAJORITY_VOTE_N --majority-vote-threshold $MAJORITY_VOTE_THRESHOLD \
  --num-judge-workers 2${PRM_MODEL_PATH:+ --prm-model-path $PRM_MODEL_PATH}\
${JUDGE_MODEL_PATH:+ --judge-model-path $JUDGE_MODEL_PATH}${JUDGE_URL:+ --judge-url $JUDGE_URL}\
${JUDGE_MODEL_NAME:+ --judge-model-name $JUDGE_MODEL_NAME}"}
exec bash "$REPO_DIR/openclaw-rl/run_qwen3_7b_openclaw_rl.sh" "$@"
