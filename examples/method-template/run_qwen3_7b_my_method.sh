#!/usr/bin/env bash
# my-method: <one line on what the method does>.
#
# Template of a method folder (docs/architecture.md, "Adding a method"): copy
# examples/method-template to a new top-level folder of the repository, rename this script
# run_qwen3_7b_<method>.sh, and edit method.py / custom_loss.py / custom_rm.py and README.md. The
# paths below use the folder's own name ($METHOD_DIR), so the copy works under any name.
#
# Starts a Ray head on loopback if none is running, then submits the training job, which starts
# the intercept server on $PORT (point OpenClaw at http://127.0.0.1:$PORT/v1) and trains in the
# background while it serves. With DATA_PATH set it trains offline from recorded sessions.
# Arguments given to the script are appended to the trainer's flags (later flags win).
# Without a GPU and without MODEL_PATH it runs on CPU with the embedded model.
# Environment: see openclaw_rl/launch/train_job.sh (MODEL_PATH, DATA_PATH, PRM_MODEL_PATH,
# MAJORITY_VOTE_N, CKPT_SAVE_DIR, PORT, the *_ARGS groups, ...).
set -e
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../openclaw_rl/launch/train_job.sh"

RL_ARGS=${RL_ARGS:-"--advantage-estimator $METHOD_DIR/method.py:MyMethod --eps-clip 0.2 \
  --max-plugin-failure-fraction 0.5"}
METHOD_ARGS="--custom-loss-function-path $METHOD_DIR/custom_loss.py --custom-rm-path $METHOD_DIR/custom_rm.py"
submit_train_job "$@"
