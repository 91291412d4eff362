#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/test-summary.sh over the logs of a real CTest run of a small project: a test that
# passes, one that skips the way GoogleTest's GTEST_SKIP does (its message on the lines after
# "FILE:LINE: Skipped"), one that skips by exit code 77 after saying why, and one disabled. The
# summary names the three that did not run, each with its reason, and none that ran; after a run
# where every test ran it prints nothing.
set -euo pipefail
summary="$(cd "$(dirname "$0")/../.." && pwd)/scripts/test-summary.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; echo "--- summary:"; cat "$work/out"; exit 1; }

mkdir "$work/src"
cat > "$work/src/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(summary_check NONE)
enable_testing()
add_test(NAME Passes.Quietly COMMAND sh -c "echo all good")
add_test(NAME Skips.LikeGoogleTest COMMAND sh -c "printf '%s\n' '[ RUN      ] Skips.LikeGoogleTest' 'x_test.cc:12: Skipped' 'python3 cannot import moto,' 'so there is no S3 server' '[  SKIPPED ] Skips.LikeGoogleTest (1 ms)'")
set_tests_properties(Skips.LikeGoogleTest PROPERTIES SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
add_test(NAME Skips.ByExitCode COMMAND sh -c "echo 'checking the .deb'; echo 'needs root: run the suite as root'; exit 77")
set_tests_properties(Skips.ByExitCode PROPERTIES SKIP_RETURN_CODE 77)
add_test(NAME Disabled.AtSize COMMAND true)
set_tests_properties(Disabled.AtSize PROPERTIES DISABLED TRUE)
CMAKE
cmake -S "$work/src" -B "$work/build" >/dev/null
(cd "$work/build" && ctest >/dev/null 2>&1) || true
bash "$summary" "$work/build" > "$work/out"

grep -qx "Skipped (2): each started and said why it could not test here." "$work/out" || fail "no count of the skipped"
grep -qx "  Skips.LikeGoogleTest: python3 cannot import moto, so there is no S3 server" "$work/out" ||
  fail "the GoogleTest skip's message"
grep -qx "  Skips.ByExitCode: needs root: run the suite as root" "$work/out" || fail "the exit-77 skip's last line"
grep -q "^Disabled (1): " "$work/out" || fail "no count of the disabled"
grep -qx "  Disabled.AtSize" "$work/out" || fail "the disabled test"
if grep -q "Passes.Quietly" "$work/out"; then fail "a test that ran is listed"; fi

# A run where every test ran: nothing to say.
sed -i '/Skips\|Disabled/d' "$work/src/CMakeLists.txt"
cmake -S "$work/src" -B "$work/build" >/dev/null
(cd "$work/build" && ctest >/dev/null 2>&1)
bash "$summary" "$work/build" > "$work/out"
[ ! -s "$work/out" ] || fail "a summary after a run where every test ran"
echo "test-summary.sh: ok"
