#!/bin/bash
#gpuq preempt=yield
# SPDX-License-Identifier: Apache-2.0
# A job that counts units of work and can give its GPUs back between any two units, then
# carry on where it stopped: the checkpoint example of docs/jobs.md ("Checkpoints: yielding a
# GPU and resuming"). count.py does exactly the same in Python.
#
#   count.sh [UNITS]     UNITS (default 20) units of COUNT_UNIT_SECONDS (default 1) seconds each
#
# Its state, the next unit to do, lives in "$GPUQ_JOB_DIR/count.state": the same directory in
# every run of the job. Outside gpuq (no GPUQ_JOB_DIR) it keeps it in the current directory.
set -u

units="${1:-20}"
unit_seconds="${COUNT_UNIT_SECONDS:-1}"
state="${GPUQ_JOB_DIR:-.}/count.state"
yield_file="${GPUQ_YIELD_FILE:-}"

case "$units" in
  '' | *[!0-9]*)
    echo "count.sh: UNITS must be a whole number, not '$units'" >&2
    exit 2
    ;;
esac

# Saves the next unit to do. A temporary file renamed over the state, so a crash at any
# moment leaves the old checkpoint or the new one, never half of one.
save() {
  printf '%s\n' "$1" >"$state.tmp.$$" && mv -f "$state.tmp.$$" "$state"
}

unit=1
if [ "${GPUQ_RESUME:-0}" = 1 ] && [ -f "$state" ]; then
  saved="$(cat "$state")"
  case "$saved" in
    '' | *[!0-9]*) echo "count.sh: ignoring a bad state file ($state: '$saved')" >&2 ;;
    *) unit="$saved" ;;
  esac
  echo "resumed at unit $unit (run ${GPUQ_RUN_NUMBER:-?})"
fi

# gpuq's last resort after the yield grace (and a cancel or timeout) is SIGTERM: save what we
# have and stop. The unit under way is not finished, so it is the next one to do.
on_term() {
  save "$unit"
  echo "stopped by SIGTERM at unit $unit"
  exit 75
}
trap on_term TERM

while [ "$unit" -le "$units" ]; do
  # Between units: has gpuq asked for the GPUs? Only the file's existence matters.
  if [ -n "$yield_file" ] && [ -e "$yield_file" ]; then
    save "$unit"
    echo "yielding at unit $unit"
    exit 75
  fi
  echo "unit $unit"
  # In the background, so that SIGTERM is handled at once rather than after the sleep.
  sleep "$unit_seconds" &
  wait "$!"
  unit=$((unit + 1))
done
echo "done: $units units"
