#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# cpu_per_job.sh GPUQ QUEUE_BENCH [JOBS] [--cgroup-root]: the machine's CPU per trivial run.
#
# Runs queue_bench's throughput part (JOBS `true` jobs on fake:8, default 500) and splits the
# CPU it costs by cgroup v2 (cpu.stat usage_usec, which also counts what perf's sampling misses
# on a virtual machine): the client (queue_bench), the daemon, and (for a gpuqd without
# gpuq-shim beside it) its spawner with the shims it forks and their jobs. With --cgroup-root
# the runs are contained (queue_bench --cgroup-root): each shim leaves its parent's cgroup for
# its run's before its go byte, so "runs" is a shim after its placement and its job. The daemon
# starts gpuq-shim itself, so without --cgroup-root its shims and their jobs count as the
# daemon's: use --cgroup-root to split them. Prints milliseconds per job and page faults per job (perf
# stat per cgroup). Needs root and a cgroup2 mount (CGROUP2, default /sys/fs/cgroup/unified or
# /sys/fs/cgroup). Wall times on a shared machine are noisy: compare medians of several runs.
set -euo pipefail
gpuq=$(realpath "$1"); bench=$(realpath "$2"); jobs=${3:-500}
extra=()
cg2=${CGROUP2:-$([ -d /sys/fs/cgroup/unified ] && echo /sys/fs/cgroup/unified || echo /sys/fs/cgroup)}
name=gpuq-cpu-per-job-$$
cg=$cg2/$name
mkdir -p "$cg"/{client,daemon,spawner,runs}
[ "${4:-}" = --cgroup-root ] && extra=(--cgroup-root "$cg/runs")
tmp=$(mktemp -d)
cleanup() {
  rmdir "$cg"/runs/* 2>/dev/null || true
  rmdir "$cg"/{client,daemon,spawner,runs} "$cg" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

perf stat -a -x, -o "$tmp/faults" -e page-faults,page-faults,page-faults,page-faults \
  -G "$name/client,$name/daemon,$name/spawner,$name/runs" -- \
  bash -c 'echo $$ > "$1/client/cgroup.procs"; echo $$ > "$2/pid"; shift 2; exec "$@"' _ "$cg" "$tmp" \
  "$bench" "$gpuq" --latency-jobs 0 --submit-jobs 0 --throughput-jobs "$jobs" "${extra[@]}" \
  > "$tmp/out" 2>&1 &
perf_pid=$!
while [ ! -s "$tmp/pid" ]; do sleep 0.01; done
# The daemon detaches (its pid is in its lock file) and, without gpuq-shim, forks its spawner at
# start: move both into their own cgroups; shims forked later are born in the spawner's.
lock=$(dirname "$(mktemp -u)")/gpuq-bench-$(cat "$tmp/pid")-fake:8/daemon.lock
daemon=""
spawner_wanted=1  # a gpuqd with gpuq-shim beside it forks no spawner
for shim in "$(dirname "$gpuq")/gpuq-shim" "$(dirname "$gpuq")/../libexec/gpuq/gpuq-shim"; do
  [ ! -x "$shim" ] || spawner_wanted=0
done
while kill -0 "$perf_pid" 2>/dev/null; do
  if [ -z "$daemon" ] && [ -s "$lock" ]; then
    daemon=$(cat "$lock")
    echo "$daemon" > "$cg/daemon/cgroup.procs"
    [ "$spawner_wanted" -eq 1 ] || break
  fi
  if [ -n "$daemon" ] && spawner=$(pgrep -P "$daemon" -x "gpuqd?"); then  # gpuqd, or gpuq before the light client
    echo "$spawner" > "$cg/spawner/cgroup.procs"
    break
  fi
  sleep 0.01
done
wait "$perf_pid"

ms() { awk -v n="$jobs" '/^usage_usec/ {printf "%.2f", $2 / n / 1000}' "$cg/$1/cpu.stat"; }
grep "(jobs/s)" "$tmp/out"
echo "CPU ms per job: client $(ms client), daemon $(ms daemon), spawner+shims+jobs $(ms spawner), runs $(ms runs)"
awk -F, -v n="$jobs" '/page-faults/ {split($4, g, "/"); printf "%s %.0f  ", g[2], $1 / n}' "$tmp/faults"
echo "(page faults per job)"
