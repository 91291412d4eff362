#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The test command: installs what is missing, builds, and runs every test (unit and end-to-end:
# real daemons, real processes, simulated GPUs, the dashboard in a headless chromium) with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
# The dashboard's browser tests (tests/web) drive Debian's chromium with playwright-core. The
# container tests (tests/containers) run a real podman, with runc (crun refuses some machines'
# cgroup layout), netavark (podman's network stack: without it even `podman import` fails, and
# it is only a recommendation) and a static busybox as the image's one binary.
bash scripts/install-deps.sh --tests chromium task-spooler podman runc netavark busybox-static
bash scripts/build.sh
build="${GPUQ_BUILD_DIR:-build}"
cd "$build"
ctest --output-on-failure -j "$(nproc)" --timeout 300
