#!/bin/bash
# gpuq-out: ckpt/latest.state
# SPDX-License-Identifier: Apache-2.0
# A training-like fleet job that survives the loss of its node (docs/fleet.md, "Resume
# elsewhere"): it does STEPS steps of STEP_SECONDS each and writes a checkpoint every
# CKPT_EVERY steps under ckpt/, a declared output, so the node pushes it every sync_every.
# When the node dies, the node that takes the job over pulls the last checkpoint pushed and
# starts this script with GPUQ_RESUME=1: it goes on from there, not from step 1.
#
#   $ gpuq fleet submit examples/fleet/checkpointing.sh
#   $ gpuq fleet submit --env STEPS=600 --env CKPT_EVERY=30 examples/fleet/checkpointing.sh
#
# A real job writes its framework's checkpoint the same way: to a new name, then renamed over
# the last one, so that a push always reads one whole checkpoint.
set -u

steps="${STEPS:-120}"
every="${CKPT_EVERY:-10}"
step_seconds="${STEP_SECONDS:-1}"
state=ckpt/latest.state
mkdir -p ckpt

step=0
if [ "${GPUQ_RESUME:-0}" = 1 ] && [ -f "$state" ]; then
  step="$(cat "$state")"
  case "$step" in
    '' | *[!0-9]*) echo "checkpointing.sh: ignoring a bad checkpoint ($state: '$step')" >&2; step=0 ;;
  esac
  echo "attempt ${GPUQ_ATTEMPT:-?}: resuming after step $step"
else
  echo "attempt ${GPUQ_ATTEMPT:-1}: starting at step 1"
fi

while [ "$step" -lt "$steps" ]; do
  sleep "$step_seconds"
  step=$((step + 1))
  if [ $((step % every)) -eq 0 ] || [ "$step" -eq "$steps" ]; then
    printf '%s\n' "$step" >"$state.tmp" && mv -f "$state.tmp" "$state"
    echo "step $step: checkpoint written"
  fi
done
echo "done: $steps steps"
