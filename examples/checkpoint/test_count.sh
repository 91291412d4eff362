#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Runs the checkpoint examples (count.sh and count.py) the way gpuq would, without a daemon:
# a first run that is asked to yield, a second run that resumes, a run stopped by SIGTERM and
# a fresh run that ignores an old checkpoint. The contract is docs/jobs.md, "Checkpoints".
# Usage: test_count.sh            (exit 0 when every check passes; CTest: checkpoint_examples)
set -u

here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/gpuq-checkpoint-XXXXXX")"
trap 'rm -rf "$work"' EXIT
failures=0

fail() {
  echo "FAIL [$name]: $*" >&2
  failures=$((failures + 1))
}

# Waits (up to 10 s) until file $1 has a line equal to $2.
wait_for_line() {
  local i
  for ((i = 0; i < 1000; i++)); do
    grep -qx -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.01
  done
  return 1
}

# Runs the example as run number $1 of the job, with GPUQ_RESUME=$2, in the background.
start_run() {
  mkdir -p "$job_dir/run-$1"
  GPUQ_JOB_DIR="$job_dir" GPUQ_RUN_DIR="$job_dir/run-$1" GPUQ_YIELD_FILE="$job_dir/run-$1/yield" \
    GPUQ_RUN_NUMBER="$1" GPUQ_RESUME="$2" COUNT_UNIT_SECONDS=0.05 \
    "$example" "${@:3}" >"$job_dir/run-$1/output.log" 2>&1 &
  pid=$!
}

check_example() {
  example="$1"
  name="$(basename "$example")"
  job_dir="$work/$name"
  mkdir -p "$job_dir"
  local log rc k

  # Run 1: asked to yield while it runs.
  start_run 1 0 60
  log="$job_dir/run-1/output.log"
  wait_for_line "$log" "unit 3" || fail "run 1 never printed 'unit 3': $(cat "$log")"
  printf '{"by": 9, "deadline": "2026-11-29T11:00:00Z"}\n' >"$job_dir/run-1/yield"
  wait "$pid"
  rc=$?
  [ "$rc" = 75 ] || fail "run 1 exited $rc, not 75: $(tail -3 "$log")"
  k="$(sed -n 's/^yielding at unit \([0-9][0-9]*\)$/\1/p' "$log")"
  if [ -z "$k" ]; then
    fail "run 1 did not print 'yielding at unit K': $(tail -3 "$log")"
    return
  fi
  [ "$(cat "$job_dir/count.state")" = "$k" ] || fail "state holds '$(cat "$job_dir/count.state")', not $k"
  [ "$(grep -c '^unit ' "$log")" = $((k - 1)) ] || fail "run 1 did units other than 1..$((k - 1))"
  grep -qx "unit $k" "$log" && fail "run 1 started unit $k after seeing the yield file"
  compgen -G "$job_dir/count.state.tmp*" >/dev/null && fail "a temporary state file was left behind"

  # Run 2: resumes at K and finishes.
  start_run 2 1 60
  wait "$pid"
  rc=$?
  log="$job_dir/run-2/output.log"
  [ "$rc" = 0 ] || fail "run 2 exited $rc, not 0: $(tail -3 "$log")"
  [ "$(head -1 "$log")" = "resumed at unit $k (run 2)" ] || fail "run 2 began with '$(head -1 "$log")'"
  [ "$(sed -n 2p "$log")" = "unit $k" ] || fail "run 2 did not continue with unit $k"
  [ "$(grep -c '^unit ' "$log")" = $((60 - k + 1)) ] || fail "run 2 did not do units $k..60"
  [ "$(tail -1 "$log")" = "done: 60 units" ] || fail "run 2 ended with '$(tail -1 "$log")'"

  # Run 3: a fresh run (GPUQ_RESUME=0) starts over even though a state file exists.
  echo 50 >"$job_dir/count.state"
  start_run 3 0 2
  wait "$pid"
  rc=$?
  log="$job_dir/run-3/output.log"
  [ "$rc" = 0 ] || fail "run 3 exited $rc"
  [ "$(cat "$log")" = "$(printf 'unit 1\nunit 2\ndone: 2 units')" ] || fail "run 3 printed: $(cat "$log")"

  # Run 4: asked to yield before it starts: saves unit 1 and does nothing.
  rm -f "$job_dir/count.state"
  mkdir -p "$job_dir/run-4"
  touch "$job_dir/run-4/yield"
  start_run 4 0 5
  wait "$pid"
  rc=$?
  log="$job_dir/run-4/output.log"
  [ "$rc" = 75 ] || fail "run 4 exited $rc, not 75"
  [ "$(cat "$log")" = "yielding at unit 1" ] || fail "run 4 printed: $(cat "$log")"
  [ "$(cat "$job_dir/count.state")" = 1 ] || fail "run 4 saved '$(cat "$job_dir/count.state")'"

  # Run 5: SIGTERM (gpuq's stop after the grace) saves the unit under way and exits 75.
  start_run 5 1 60
  log="$job_dir/run-5/output.log"
  wait_for_line "$log" "unit 2" || fail "run 5 never printed 'unit 2': $(cat "$log")"
  kill -TERM "$pid"
  wait "$pid"
  rc=$?
  [ "$rc" = 75 ] || fail "run 5 exited $rc after SIGTERM, not 75: $(tail -3 "$log")"
  k="$(sed -n 's/^stopped by SIGTERM at unit \([0-9][0-9]*\)$/\1/p' "$log")"
  [ -n "$k" ] || fail "run 5 did not say where it stopped: $(tail -3 "$log")"
  [ "$(cat "$job_dir/count.state")" = "$k" ] || fail "run 5 saved '$(cat "$job_dir/count.state")', not $k"
  [ "$(grep '^unit ' "$log" | tail -1)" = "unit $k" ] || fail "run 5 was not in unit $k"

  # A bad argument is a usage error.
  "$example" many >/dev/null 2>&1
  rc=$?
  [ "$rc" = 2 ] || fail "'$name many' exited $rc, not 2"
}

check_example "$here/count.sh"
if command -v python3 >/dev/null; then
  check_example "$here/count.py"
else
  echo "python3 not found: count.py not checked" >&2
fi
if [ "$failures" -gt 0 ]; then
  echo "$failures checks failed" >&2
  exit 1
fi
echo "checkpoint examples: all checks passed"
