#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpuq beside task-spooler (Debian's `tsp`), step by step as a user feels it, on private state:
#   (a) `gpuq status` vs `tsp -l`: whole-process time, median of rounds of calls;
#   (b) submit-to-start through each CLI on an idle queue: from just before the submit command to
#       the moment the job's first command runs (the job writes bash's $EPOCHREALTIME), p50, p99;
#   (c) N trivial jobs (`true`) submitted from a shell loop, 2 at a time, until all finished;
#   (d) M trivial jobs already queued, drained with 8 slots (gpuq: undrain; tsp: -S 8). M is
#       at most 950: each job queued in tsp is a client connected to its server, which waits on
#       them with select() (1,024 descriptors); near 1,000 the next `tsp` blocks for good.
# The two tools run alternately (a: round by round; b: sample by sample; c, d: run by run), with
# the same number of slots (fake GPUs for gpuq, -S for tsp), each on its own home/socket under
# one temporary directory, so neither sees the other's state or a warm queue of its own.
# It prints each figure and the gpuq/tsp ratio the way the goals are stated: (a) time ratio
# (lower is better), (b) p50 ratio (lower), (c) and (d) throughput ratio (higher).
#
# Usage: bench/vs_tsp.sh [GPUQ_BINARY] [--calls 100] [--samples 100] [--loop-jobs 300]
#                        [--queued-jobs 900] [--rounds 1] [--cgroup-root DIR] [--no-install]
# --cgroup-root DIR: gpuq's runs are contained by cgroup v2 under a fresh child of DIR (its
# `[cgroup] root`, docs/containment.md; DIR must be a writable cgroup v2 directory, e.g. one
# made under /sys/fs/cgroup/unified by root); without it the daemon uses its default (here,
# without a delegated cgroup: the marker sweep). The containment in use is printed.
# Installs task-spooler with apt-get when `tsp` is missing (needs root or sudo); with
# --no-install it exits 77 instead (the smoke test in bench/CMakeLists.txt skips then).
# Timings are for comparison on one machine, not assertions; close other work first.
set -euo pipefail

gpuq="$(cd "$(dirname "$0")/.." && pwd)/build/bin/gpuq"
calls=100 samples=100 loop_jobs=300 queued_jobs=900 rounds=1 install=1 cgroup_root=""
while [ $# -gt 0 ]; do
  case "$1" in
    --calls) calls="$2"; shift 2 ;;
    --samples) samples="$2"; shift 2 ;;
    --loop-jobs) loop_jobs="$2"; shift 2 ;;
    --queued-jobs) queued_jobs="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --cgroup-root) cgroup_root="$2"; shift 2 ;;
    --no-install) install=0; shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    -*) echo "vs_tsp.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) gpuq="$(realpath "$1")"; shift ;;
  esac
done
if [ "$queued_jobs" -gt 950 ]; then
  echo "vs_tsp.sh: --queued-jobs $queued_jobs: tsp cannot hold more than ~950 queued jobs (see --help)" >&2; exit 2
fi
[ -x "$gpuq" ] || { echo "vs_tsp.sh: no gpuq binary at $gpuq (build first: scripts/build.sh)" >&2; exit 2; }
if [ -n "$cgroup_root" ] && [ ! -w "$cgroup_root/cgroup.procs" ]; then
  echo "vs_tsp.sh: $cgroup_root is not a writable cgroup v2 directory (see --help)" >&2; exit 2
fi
if ! command -v tsp >/dev/null; then
  if [ "$install" -eq 0 ]; then
    echo "vs_tsp.sh: tsp is not installed (apt-get install task-spooler)" >&2; exit 77
  fi
  echo "vs_tsp.sh: installing task-spooler (tsp) ..." >&2
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get install -y -qq task-spooler >/dev/null || {
    $sudo_cmd apt-get update -qq && $sudo_cmd apt-get install -y -qq task-spooler >/dev/null; }
fi

work="$(mktemp -d /tmp/gpuq-vs-tsp.XXXXXX)"
export GPUQ_HOME="$work/gpuq" TS_SOCKET="$work/tsp.sock" TMPDIR="$work/tmp"
export TS_MAXFINISHED=100000 TS_MAXCONN=100000
mkdir -p "$TMPDIR"
daemon_pid=""
elapsed=0  # what the last run of a part of (c) or (d) took, in microseconds

# Whether process $1 still runs. A killed daemon whose parent (init) has not reaped it yet is a
# zombie, which `kill -0` still finds.
running() {
  local state
  state="$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" || return 1
  [ -n "$state" ] && [ "$state" != Z ]
}

stop_all() {
  if [ -n "$daemon_pid" ]; then
    kill "$daemon_pid" 2>/dev/null || true
    while running "$daemon_pid"; do sleep 0.05; done
    daemon_pid=""
  fi
  # (d)'s gate job reads a fifo: release it, or it outlives its server and this script.
  if [ -p "$work/gate" ]; then timeout 2 bash -c "echo go >'$work/gate'" || true; rm -f "$work/gate"; fi
  tsp -K >/dev/null 2>&1 || true
  [ -z "$cgroup_root" ] || remove_cgroups "$cgroup_root/vs-tsp-$$"
}
# Removes a cgroup tree the stopped daemon left, children first (rmdir of an empty cgroup).
remove_cgroups() {
  [ -d "$1" ] || return 0
  find "$1" -depth -type d -exec rmdir {} + 2>/dev/null || true
}
trap 'stop_all; rm -rf "$work"' EXIT
trap 'exit 143' TERM INT  # so that EXIT's cleanup runs when it is stopped too

# Both queues start empty for each part: a fresh daemon on a fresh home, a fresh tsp server.
start_queues() {  # $1: slots
  stop_all
  rm -rf "$GPUQ_HOME" "$TMPDIR"/*
  if [ -n "$cgroup_root" ]; then
    mkdir -p "$cgroup_root/vs-tsp-$$"
    (umask 077; mkdir -p "$GPUQ_HOME"
     printf '[cgroup]\nroot = "%s"\n' "$cgroup_root/vs-tsp-$$" >"$GPUQ_HOME/config.toml")
  fi
  local out
  out="$("$gpuq" daemon --home "$GPUQ_HOME" --gpus "fake:$1" --http off --detach)"
  daemon_pid="$(sed -n 's/.*(pid \([0-9]*\)).*/\1/p' <<<"$out" | head -1)"
  [ -n "$daemon_pid" ] || { echo "vs_tsp.sh: could not start the daemon: $out" >&2; exit 1; }
  tsp -K >/dev/null 2>&1 || true
  # The server -K stopped may still hold its socket for a moment: a client that reaches it then
  # fails ("Error calling recv_msg"). Try again until a fresh server answers.
  local tries=0
  until tsp -S "$1" >/dev/null 2>&1; do
    tries=$((tries + 1))
    [ "$tries" -lt 100 ] || { echo "vs_tsp.sh: tsp -S $1 keeps failing" >&2; exit 1; }
    sleep 0.05
  done
}

now_us() { local t="${EPOCHREALTIME/./}"; echo "$((10#$t))"; }
# Median and 99th percentile of numbers on stdin (nearest rank).
pct() { sort -n | awk -v p="$1" '{v[NR]=$1} END {i=int(NR*p/100+0.999); if (i<1) i=1; print v[i]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a/b}'; }
ms() { awk -v u="$1" 'BEGIN {printf "%.2f ms", u/1000}'; }

# Submits one job through each CLI, printing its id (and nothing else, as tsp does), so that each
# side pays for its own process only: no pipe through sed for one of them.
gpuq_submit() { "$gpuq" submit --id-only --gpus 1 -- "$@"; }
tsp_submit() { tsp -N 1 "$@"; }
# Waits until every job of the queue has finished.
gpuq_wait_all() { "$gpuq" wait "$@" >/dev/null; }
tsp_wait_all() {
  tsp -w >/dev/null 2>&1 || true
  local id
  for id in $(tsp -l | awk '$2 == "running" || $2 == "queued" {print $1}'); do tsp -w "$id" >/dev/null 2>&1 || true; done
}

part_a() {
  start_queues 2
  tsp true >/dev/null; tsp -w >/dev/null
  gpuq_wait_all "$(gpuq_submit true)"
  local g=() t=() r s i
  for ((r = 0; r < 5; r++)); do
    s=$(now_us); for ((i = 0; i < calls; i++)); do "$gpuq" status >/dev/null; done
    g+=($(( ($(now_us) - s) / calls )))
    s=$(now_us); for ((i = 0; i < calls; i++)); do tsp -l >/dev/null; done
    t+=($(( ($(now_us) - s) / calls )))
  done
  local gm tm
  gm=$(printf '%s\n' "${g[@]}" | pct 50); tm=$(printf '%s\n' "${t[@]}" | pct 50)
  echo "(a) status, whole process:   gpuq status $(ms "$gm")   tsp -l $(ms "$tm")   ratio $(ratio "$gm" "$tm")   (goal <= 1.0)"
}

part_b() {
  start_queues 2
  local stamp="$work/stamp" g=() t=() i t0 id
  for ((i = 0; i < samples; i++)); do
    rm -f "$stamp"; t0=$(now_us)
    id=$(gpuq_submit bash -c "echo \$EPOCHREALTIME > $stamp")
    "$gpuq" wait "$id" >/dev/null
    g+=($(( $(tr -d . <"$stamp") - t0 )))
    rm -f "$stamp"; t0=$(now_us)
    id=$(tsp_submit bash -c "echo \$EPOCHREALTIME > $stamp")
    tsp -w "$id" >/dev/null
    t+=($(( $(tr -d . <"$stamp") - t0 )))
  done
  local g50 g99 t50 t99
  g50=$(printf '%s\n' "${g[@]}" | pct 50); g99=$(printf '%s\n' "${g[@]}" | pct 99)
  t50=$(printf '%s\n' "${t[@]}" | pct 50); t99=$(printf '%s\n' "${t[@]}" | pct 99)
  echo "(b) submit-to-start, $samples each: gpuq p50 $(ms "$g50") p99 $(ms "$g99")   tsp p50 $(ms "$t50") p99 $(ms "$t99")   p50 ratio $(ratio "$g50" "$t50")   (goal <= 1.0)"
}

# (c) one run of each: from the first submit to the last job's end, into $elapsed. These run in
# the main shell, not in $(...): a subshell's daemon_pid would be lost, and its daemon left.
# Both loops run each submit as a plain command (no $(...) around it): gpuq's ids go to a file,
# for `gpuq wait`, tsp's to /dev/null (its wait needs none).
loop_gpuq() {
  start_queues 2
  local s i ids="$work/ids"
  : >"$ids"
  s=$(now_us)
  for ((i = 0; i < loop_jobs; i++)); do gpuq_submit true >>"$ids"; done
  gpuq_wait_all $(<"$ids")
  elapsed=$(( $(now_us) - s ))
}
loop_tsp() {
  start_queues 2
  local s i
  s=$(now_us)
  for ((i = 0; i < loop_jobs; i++)); do tsp_submit true >/dev/null; done
  tsp_wait_all
  elapsed=$(( $(now_us) - s ))
}

# (d) the jobs are queued first with nothing able to start; the clock runs from the release.
drain_gpuq() {
  start_queues 8
  "$gpuq" drain >/dev/null
  local ids=() i s
  for ((i = 0; i < queued_jobs; i++)); do ids+=("$(gpuq_submit true)"); done
  s=$(now_us)
  "$gpuq" undrain >/dev/null
  gpuq_wait_all "${ids[@]}"
  elapsed=$(( $(now_us) - s ))
}
drain_tsp() {
  start_queues 1
  local gate="$work/gate" i s
  rm -f "$gate"; mkfifo "$gate"
  tsp -N 1 bash -c "read < $gate" >/dev/null   # holds the only slot until released
  for ((i = 0; i < queued_jobs; i++)); do tsp_submit true >/dev/null; done
  s=$(now_us)
  tsp -S 8 >/dev/null
  echo go >"$gate"
  tsp_wait_all
  elapsed=$(( $(now_us) - s ))
}

throughput() { awk -v n="$1" -v u="$2" 'BEGIN {printf "%.1f", n / (u / 1e6)}'; }

echo "gpuq: $gpuq"
echo "tsp:  $(command -v tsp) ($(dpkg-query -W -f '${Version}' task-spooler 2>/dev/null || echo '?'))"
echo "machine: $(nproc) cores; $(uname -r)"
start_queues 1
echo "gpuq $("$gpuq" gpus | grep '^containment' || echo 'containment: not reported')"
part_a
part_b
for ((r = 0; r < rounds; r++)); do
  loop_gpuq; gc=$elapsed; loop_tsp; tc=$elapsed
  gj=$(throughput "$loop_jobs" "$gc"); tj=$(throughput "$loop_jobs" "$tc")
  echo "(c) $loop_jobs jobs from a shell loop, 2 at a time: gpuq $gj jobs/s   tsp $tj jobs/s   ratio $(ratio "$gj" "$tj")   (goal >= 1.0)"
done
for ((r = 0; r < rounds; r++)); do
  drain_gpuq; gd=$elapsed; drain_tsp; td=$elapsed
  gj=$(throughput "$queued_jobs" "$gd"); tj=$(throughput "$queued_jobs" "$td")
  echo "(d) $queued_jobs queued jobs, 8 slots: gpuq $gj jobs/s   tsp $tj jobs/s   ratio $(ratio "$gj" "$tj")   (goal >= 1.0)"
done
stop_all
# Every daemon it started names its home under $work on its command line.
if pgrep -f -- "--home $work/" >/dev/null; then
  echo "vs_tsp.sh: daemons left running: $(pgrep -f -- "--home $work/" | tr '\n' ' ')" >&2
  exit 1
fi
echo "nothing left running"
