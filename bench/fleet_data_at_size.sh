#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fleet's data at size, outside the suite (minutes each, several GiB of disk): real daemons
# on moto (tests/fleet/fleet_data_e2e_test.cc, the DISABLED_ tests) push and pull a 6 GiB
# output (above S3's 5 GiB single-PUT limit), lose a node halfway through a 1 GiB push, lose a
# counter job's node twice, and lose the store for 15 s during pushes. Then the push and pull
# throughput of bench/fleet_transfer.sh. Run from the repository root after a build:
#
#   bench/fleet_data_at_size.sh [BUILD_DIR]
set -euo pipefail
build="${1:-build}"
"$build/tests/fleet/fleet_e2e_test" --gtest_also_run_disabled_tests \
  --gtest_filter='FleetE2E.DISABLED_*' --gtest_color=no
bash "$(dirname "$0")/fleet_transfer.sh" "$build/bin/gpuq" 2048 3
