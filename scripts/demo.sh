#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpuq's main job, from a fresh clone: install what is missing, build, start a daemon on its
# SQLite store in .gpuq-demo/, submit the example plan (examples/plan.sh), and show the queue
# until every job is done. Uses the machine's NVIDIA GPUs, or 4 simulated GPUs where there are
# none (and says so). Stops the daemon at the end unless --keep is given.
set -euo pipefail
cd "$(dirname "$0")/.."
keep=0
[ "${1:-}" = "--keep" ] && keep=1

# Only what the demo runs: the packages that build gpuq and the one binary (scripts/test.sh
# installs and builds everything else).
bash scripts/build.sh gpuq
root="$(pwd)"
export PATH="$root/${GPUQ_BUILD_DIR:-build}/bin:$PATH"
export GPUQ_HOME="$root/.gpuq-demo"

if [ -S "$GPUQ_HOME/gpuq.sock" ] && gpuq status >/dev/null 2>&1; then
  echo "== stopping the previous demo daemon"
  kill "$(cat "$GPUQ_HOME/daemon.lock")" 2>/dev/null || true
  sleep 0.5
fi
rm -rf "$GPUQ_HOME"

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  gpus=auto
  echo "== NVIDIA GPUs found: the demo jobs run on them"
else
  gpus=fake:4
  echo "== no NVIDIA GPU on this machine: using 4 simulated GPUs (--gpus fake:4)"
fi
echo "== gpuq daemon --detach --gpus $gpus   (state in $GPUQ_HOME)"
gpuq daemon --detach --gpus "$gpus"
gpuq gpus

echo "== submitting the example plan (examples/plan.sh)"
ids=$(bash examples/plan.sh)

echo "== the queue until everything is done"
while true; do
  if [ -t 1 ]; then clear; fi
  gpuq status
  set +e
  gpuq wait $ids --timeout 1s >/dev/null 2>&1
  rc=$?
  set -e
  [ "$rc" -eq 124 ] || break
  echo
done
echo
echo "== final state"
gpuq status --all
echo
echo "== the eval job's log (gpuq logs eval-a15)"
gpuq logs eval-a15
echo
echo "== events (gpuq events), last 8"
gpuq events | tail -n 8
if [ "$keep" -eq 1 ]; then
  echo
  echo "The daemon keeps running: GPUQ_HOME=$GPUQ_HOME gpuq status"
else
  kill "$(cat "$GPUQ_HOME/daemon.lock")"
  echo
  echo "Demo done; daemon stopped. Run 'scripts/demo.sh --keep' to keep it running."
fi
