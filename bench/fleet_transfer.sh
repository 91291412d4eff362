#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fleet's data path at size (docs/fleet.md, "Files of any size"): pushes and pulls one
# file of SIZE_MIB (default 2048) between disk and an S3 API on loopback (moto, as the tests
# start it), with `gpuq fleet push` / `gpuq fleet pull` (the code a node's daemon runs for
# declared data) beside a plain `curl -T` PUT and `curl -o` GET of the same file to the same
# server, and reports throughput, the ratio to curl (medians of RUNS, default 3) and the peak
# resident memory of the gpuq process.
#
#   bench/fleet_transfer.sh [GPUQ_BINARY] [SIZE_MIB] [RUNS]
#   PART_SIZE=64MiB TRANSFERS=4 bench/fleet_transfer.sh build/bin/gpuq 2048 3
#
# Needs python3 with moto and curl. Leaves nothing running and removes its files.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
gpuq="$(realpath "${1:-$here/../build/bin/gpuq}")"
size_mib="${2:-2048}"
runs="${3:-3}"
part_size="${PART_SIZE:-64MiB}"
transfers="${TRANSFERS:-4}"
work="$(mktemp -d "${TMPDIR:-/tmp}/gpuq-transfer-XXXXXX")"
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

coproc SERVER { exec python3 "$here/../tests/fleet/s3_server.py" 0 bench 2>"$work/server.log"; }
server_pid=$SERVER_PID
read -r ready port key secret <&"${SERVER[0]}" || { cat "$work/server.log" >&2; exit 1; }
[ "$ready" = ready ] || { echo "moto did not start: $ready" >&2; exit 1; }
endpoint="http://127.0.0.1:$port"
export AWS_ENDPOINT_URL="$endpoint" AWS_ACCESS_KEY_ID="$key" AWS_SECRET_ACCESS_KEY="$secret" AWS_REGION=us-east-1
mkdir -p "$work/home"
printf '[fleet]\npart_size = "%s"\ntransfers = %s\ntimeout = "120s"\n' "$part_size" "$transfers" >"$work/home/config.toml"

echo "making a ${size_mib} MiB file..."
dd if=/dev/urandom of="$work/file.bin" bs=1M count="$size_mib" status=none
bytes=$(stat -c %s "$work/file.bin")

# Runs a command, samples its peak resident memory (VmHWM) every 50 ms; prints "SECONDS PEAK_KIB".
timed() {
  local start end peak=0 pid hwm
  start=$(date +%s.%N)
  "$@" >"$work/last.out" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    [ -n "$hwm" ] && [ "$hwm" -gt "$peak" ] && peak=$hwm
    sleep 0.05
  done
  wait "$pid" || { cat "$work/last.out" >&2; return 1; }
  end=$(date +%s.%N)
  echo "$(echo "$end - $start" | bc -l) $peak"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

sigv4=(--aws-sigv4 "aws:amz:us-east-1:s3" --user "$key:$secret" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -sf)
declare -A seconds
peak_push=0
peak_pull=0
for ((i = 1; i <= runs; i++)); do
  read -r s _ < <(timed curl "${sigv4[@]}" -T "$work/file.bin" "$endpoint/bench/curl.bin")
  seconds[curl_put]+="$s "
  read -r s peak < <(timed "$gpuq" --home "$work/home" fleet push --fleet s3://bench/gpuq "$work/file.bin" big.bin)
  seconds[gpuq_push]+="$s "
  [ "$peak" -gt "$peak_push" ] && peak_push=$peak
  read -r s _ < <(timed curl "${sigv4[@]}" -o "$work/curl.out" "$endpoint/bench/curl.bin")
  seconds[curl_get]+="$s "
  read -r s peak < <(timed "$gpuq" --home "$work/home" fleet pull --fleet s3://bench/gpuq big.bin "$work/pulled.bin")
  seconds[gpuq_pull]+="$s "
  [ "$peak" -gt "$peak_pull" ] && peak_pull=$peak
  cmp -s "$work/file.bin" "$work/pulled.bin" || { echo "the pulled file differs from the pushed one" >&2; exit 1; }
  rm -f "$work/curl.out" "$work/pulled.bin"
done

rate() { echo "scale=1; $bytes / 1048576 / $1" | bc -l; }
m_put=$(tr ' ' '\n' <<<"${seconds[curl_put]}" | grep . | median)
m_push=$(tr ' ' '\n' <<<"${seconds[gpuq_push]}" | grep . | median)
m_get=$(tr ' ' '\n' <<<"${seconds[curl_get]}" | grep . | median)
m_pull=$(tr ' ' '\n' <<<"${seconds[gpuq_pull]}" | grep . | median)
echo "file: ${size_mib} MiB; part_size $part_size, transfers $transfers; medians of $runs runs against moto on loopback"
printf 'push: gpuq %s MiB/s   curl -T %s MiB/s   ratio %.2f   gpuq peak RSS %d MiB\n' \
  "$(rate "$m_push")" "$(rate "$m_put")" "$(echo "$m_put / $m_push" | bc -l)" $((peak_push / 1024))
printf 'pull: gpuq %s MiB/s   curl -o %s MiB/s   ratio %.2f   gpuq peak RSS %d MiB\n' \
  "$(rate "$m_pull")" "$(rate "$m_get")" "$(echo "$m_get / $m_pull" | bc -l)" $((peak_pull / 1024))
