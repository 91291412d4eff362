#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test (unit and end-to-end:
# real daemons, real processes, simulated GPUs, the dashboard in a headless chromium) with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
# The dashboard's browser tests (tests/web) drive Debian's chromium with playwright-core.
bash scripts/install-deps.sh chromium task-spooler
bash scripts/build.sh
build="${GPUQ_BUILD_DIR:-build}"
cd "$build"
ctest --output-on-failure -j "$(nproc)" --timeout 300
