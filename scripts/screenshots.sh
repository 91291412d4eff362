#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerates the dashboard's screenshots (docs/screenshots/*.png, shown in the README) from a
# real daemon with real jobs, in a headless chromium. Needs a build (scripts/build.sh) and
# chromium (scripts/test.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${GPUQ_BUILD_DIR:-build}"
cmake --build "$build" --target gpuq >/dev/null
GPUQ_BUILD_DIR="$build" node tests/web/screenshots.mjs
