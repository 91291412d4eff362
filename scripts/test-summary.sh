#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Says which tests of the last CTest run did not run, and why, from the logs CTest leaves in a
# build directory: each skipped test with the reason it gave (a GoogleTest GTEST_SKIP message,
# or the last lines a script printed before it exited 77), each disabled one (never started: a
# GoogleTest named DISABLED_, run on purpose only). Prints nothing when every test ran.
# scripts/test.sh calls it after the suite; it reads only, and exits 0.
#
#   scripts/test-summary.sh BUILD_DIR
set -euo pipefail
dir="${1:?usage: scripts/test-summary.sh BUILD_DIR}/Testing/Temporary"
[ -s "$dir/LastTestsDisabled.log" ] || exit 0
[ -f "$dir/LastTest.log" ] || exit 0
# LastTestsDisabled.log lists every test that did not run, "NUMBER:NAME"; LastTest.log holds the
# output of each test between its "N/M Testing: NAME" and "<end of output>" lines (a disabled one
# with an empty command and no output). CTest leaves LastTestsDisabled.log as it was when a run
# has no such test: a name that is not in LastTest.log is from an earlier run, and left out.
awk '
  FNR == NR {
    sub(/^[0-9]+:/, "")
    if ($0 != "") { wanted[$0] = 1; order[++count] = $0 }
    next
  }
  /^[0-9]+\/[0-9]+ Testing: / {
    name = $0; sub(/^[0-9]+\/[0-9]+ Testing: /, "", name)
    current = (name in wanted) ? name : ""; in_output = 0; gtest_reason = 0; last = ""
    if (current != "") seen[current] = 1
    next
  }
  current == "" { next }
  /^Command: ""$/ { never_started[current] = 1; next }  # a disabled test has no command
  /^Output:$/ { in_output = 1; next }
  /^-+$/ && in_output == 1 { next }
  /^<end of output>$/ {
    in_output = 0
    if (!(current in reason)) reason[current] = last
    if (!(current in never_started)) ran[current] = 1
    current = ""
    next
  }
  in_output {
    # GoogleTest: "FILE:LINE: Skipped", the message (maybe several lines), "[  SKIPPED ] NAME".
    if ($0 ~ /: Skipped$/) { gtest_reason = 1; said = ""; next }
    if ($0 ~ /^\[  SKIPPED \]/) {
      if (gtest_reason) { reason[current] = said; gtest_reason = 0 }
      next
    }
    if (gtest_reason) { said = (said == "") ? $0 : said " " $0; next }
    if ($0 != "" && $0 !~ /^\[/) last = $0
  }
  END {
    skipped = 0; disabled = 0
    for (i = 1; i <= count; i++) {
      if (!(order[i] in seen)) continue  # listed by an earlier run: this one had no such test
      if (order[i] in ran) skipped++; else disabled++
    }
    if (skipped > 0) {
      printf "Skipped (%d): each started and said why it could not test here.\n", skipped
      for (i = 1; i <= count; i++) {
        n = order[i]
        if (n in ran) printf "  %s: %s\n", n, (reason[n] != "" ? reason[n] : "(it gave no reason)")
      }
    }
    if (disabled > 0) {
      printf "Disabled (%d): not started, by design (a GoogleTest named DISABLED_ runs only when asked for,\n", disabled
      printf "  with --gtest_also_run_disabled_tests; the fleet'"'"'s at-size ones: bench/fleet_data_at_size.sh).\n"
      for (i = 1; i <= count; i++) if ((order[i] in seen) && !(order[i] in ran)) printf "  %s\n", order[i]
    }
  }
' "$dir/LastTestsDisabled.log" "$dir/LastTest.log"
