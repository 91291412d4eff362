#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fuzzes gpuq's parsers with libFuzzer under AddressSanitizer and UndefinedBehaviorSanitizer
# (docs/fuzzing.md). Installs what is missing (clang-16, libFuzzer's and the sanitizers'
# runtimes, llvm-symbolizer), configures and builds the clang build directory build-fuzz
# (GPUQ_FUZZ=ON; the normal build/ is not touched), runs each target for SECONDS on a copy of
# its seed corpus (fuzz/corpus/<target>/ plus its regressions: the repository's corpus is never
# written), and prints a table: executions, seconds, execs/s, corpus size, and the result (ok,
# or crash / leak / timeout / oom with the reproducer's path, kept under
# build-fuzz/runs/<target>/). Exits 1 when any target failed.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...] [-j JOBS]
#     SECONDS  per target (default 60: a smoke run; 600 is the long run)
#     TARGET   only these (default: every gpuq_fuzz_target of fuzz/CMakeLists.txt)
#     -j JOBS  targets fuzzed at the same time (default 1: each target gets one core)
# Environment: GPUQ_FUZZ_BUILD_DIR (default build-fuzz), GPUQ_FUZZ_TIMEOUT (seconds one input
# may take before it counts as a hang, default 10), GPUQ_FUZZ_RSS_MB (default 2048).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
jobs=1
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    -j) jobs="$2"; shift 2 ;;
    -j*) jobs="${1#-j}"; shift ;;
    -h | --help) sed -n '3,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *[!0-9]*) targets+=("$1"); shift ;;
    *) seconds="$1"; shift ;;
  esac
done
build="${GPUQ_FUZZ_BUILD_DIR:-build-fuzz}"
hang_seconds="${GPUQ_FUZZ_TIMEOUT:-10}"
rss_mb="${GPUQ_FUZZ_RSS_MB:-2048}"

known=($(sed -n 's/^gpuq_fuzz_target(\([a-z0-9_]*\).*/\1/p' fuzz/CMakeLists.txt))
if [ ${#targets[@]} -eq 0 ]; then
  targets=("${known[@]}")
fi
for t in "${targets[@]}"; do
  if [[ ! " ${known[*]} " =~ " $t " ]]; then
    echo "fuzz.sh: no target '$t'; the targets are: ${known[*]}" >&2
    exit 2
  fi
done

# --- what the fuzz build needs, beyond the normal build's packages ---------------------------
# clang; libFuzzer's and the sanitizers' runtimes; llvm-symbolizer for readable reports. Clang 16
# (in Debian 12): the version the long runs were made with. The sources avoid what clang 14
# refuses (capturing a structured binding in a lambda), but the fuzz build is run with 16.
clang_version=16
compiler="clang++-$clang_version"
bash scripts/install-deps.sh "clang-$clang_version" "libclang-rt-$clang_version-dev" "llvm-$clang_version"
export ASAN_SYMBOLIZER_PATH="${ASAN_SYMBOLIZER_PATH:-/usr/lib/llvm-$clang_version/bin/llvm-symbolizer}"
# UBSan's report with the stack that led to it (the build aborts on the first report anyway:
# -fno-sanitize-recover=undefined, the top-level CMakeLists.txt).
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# --- the clang build --------------------------------------------------------------------------
# Configured afresh when new, or when configured with another compiler (an older clang).
configured=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
if [ ! -f "$build/build.ninja" ] || [ "$(basename "${configured:-none}")" != "$compiler" ]; then
  launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  # Warnings are the GCC build's job (-Werror there); clang's extra ones must not stop fuzzing.
  cmake --fresh -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER="$compiler" -DGPUQ_FUZZ=ON -DGPUQ_WERROR=OFF "${launcher[@]}" >/dev/null
fi
build_targets=()
for t in "${targets[@]}"; do build_targets+=("fuzz_$t"); done
cmake --build "$build" -j "$(nproc)" --target "${build_targets[@]}"

# --- one target: a run on a copy of its corpus, then one summary line ------------------------
# runs/<target>/: corpus/ (the copy, grown by the run), artifacts/ (reproducers), log, summary.
run_target() {
  local name="$1"
  local dir="$build/runs/$name"
  rm -rf "$dir"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp fuzz/corpus/"$name"/* "$dir/corpus/"
  if [ -d "fuzz/regressions/$name" ]; then
    for f in fuzz/regressions/"$name"/*; do
      [ -f "$f" ] && cp "$f" "$dir/corpus/regression-$(basename "$f")"
    done
  fi
  local dict=()
  if [ -f "fuzz/dict/$name.dict" ]; then dict=("-dict=fuzz/dict/$name.dict"); fi
  local start end rc=0
  start=$(date +%s.%N)
  nice -n 10 "$build/fuzz/fuzz_$name" "${dict[@]}" -max_total_time="$seconds" \
    -timeout="$hang_seconds" -rss_limit_mb="$rss_mb" -print_final_stats=1 \
    -artifact_prefix="$dir/artifacts/" "$dir/corpus" >"$dir/log" 2>&1 || rc=$?
  end=$(date +%s.%N)

  local execs rate elapsed files result artifact
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -n 1)
  if [ -z "$execs" ]; then  # no final stats: take the last status line ("#1234 ...")
    execs=$(grep -o '^#[0-9]*' "$dir/log" | tail -n 1 | tr -d '#')
  fi
  execs="${execs:-0}"
  elapsed=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.0f", b - a }')
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log" | tail -n 1)
  if [ -z "$rate" ]; then
    rate=$(awk -v n="$execs" -v s="$elapsed" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }')
  fi
  files=$(find "$dir/corpus" -type f | wc -l)
  artifact=$(find "$dir/artifacts" -type f ! -name 'slow-unit-*' | head -n 1)
  if [ "$rc" -eq 0 ]; then
    result="ok"
  elif [ -n "$artifact" ]; then
    local kind
    kind=$(basename "$artifact")
    result="${kind%%-*}: $artifact"
  else
    result="failed (exit $rc): see $dir/log"
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$execs" "$elapsed" "$rate" "$files" "$result" \
    >"$dir/summary"
}

echo "fuzz.sh: ${#targets[@]} target(s), ${seconds}s each, $jobs at a time; logs in $build/runs/"
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  echo "fuzz.sh: fuzzing $t"
  run_target "$t" &
  running=$((running + 1))
done
wait

failed=0
table="$build/runs/summary.txt"
printf '%-16s %12s %8s %9s %8s  %s\n' target execs seconds 'execs/s' corpus result >"$table"
for t in "${targets[@]}"; do
  IFS=$'\t' read -r name execs elapsed rate files result <"$build/runs/$t/summary"
  printf '%-16s %12s %8s %9s %8s  %s\n' "$name" "$execs" "$elapsed" "$rate" "$files" "$result" \
    >>"$table"
  [ "$result" = ok ] || failed=1
done
cat "$table"
if [ "$failed" -ne 0 ]; then
  echo "fuzz.sh: a target failed; docs/fuzzing.md says how its reproducer becomes a regression test" >&2
  exit 1
fi
