#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test (unit and end-to-end:
# real daemons, real processes, simulated GPUs) with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
build="${GPUQ_BUILD_DIR:-build}"
cd "$build"
ctest --output-on-failure -j "$(nproc)" --timeout 300
