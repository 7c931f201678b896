#!/usr/bin/env bash
# Binary RL on live OpenClaw conversations: a PRM votes +1 / -1 / 0 on each main turn from its
# next state; the reward is broadcast over the turn's tokens; PPO clipped loss.
#
# Starts a Ray head on loopback if none is running, then submits the training job, which starts
# the intercept server on $PORT (point OpenClaw at http://127.0.0.1:$PORT/v1) and trains in the
# background while it serves. With DATA_PATH set it trains offline from recorded sessions.
# Arguments given to the script are appended to the trainer's flags (later flags win).
# Without a GPU and without MODEL_PATH it runs on CPU with the embedded model.
# Environment: see openclaw_rl/launch/train_job.sh (MODEL_PATH, DATA_PATH, PRM_MODEL_PATH,
# MAJORITY_VOTE_N, MAJORITY_VOTE_THRESHOLD, CKPT_SAVE_DIR, PORT, *_ARGS groups, ...).
set -e
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../openclaw_rl/launch/train_job.sh"

RL_ARGS=${RL_ARGS:-"--advantage-estimator broadcast --eps-clip 0.2 --eps-clip-high 0.28 --use-tis --tis-cap 2.0"}
submit_train_job "$@"
