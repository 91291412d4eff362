#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what is missing to build, then configures and builds gpuq into build/ (or
# $GPUQ_BUILD_DIR): everything (tests, benchmarks, fuzz replays), or only the targets named as
# arguments (`scripts/build.sh gpuq`: the binary alone, as scripts/demo.sh builds it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
build="${GPUQ_BUILD_DIR:-build}"
# Warnings are errors here (and so in CI), also in a build directory first configured by hand,
# where GPUQ_WERROR defaults to OFF.
if [ ! -f "$build/build.ninja" ]; then
  # ccache, where it is installed (and no launcher was chosen), so that rebuilds in a second
  # clone or after a clean reuse what was compiled before.
  launcher=()
  if [ -z "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ] && command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  # Unity batches (CMakeLists.txt, GPUQ_UNITY_BUILD): a fresh build of gpuq in a third of the
  # time; GPUQ_UNITY_BUILD=OFF compiles file by file (quicker after a change to one file).
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUQ_WERROR=ON \
    -DGPUQ_UNITY_BUILD="${GPUQ_UNITY_BUILD:-ON}" "${launcher[@]}" >/dev/null
else
  cmake -S . -B "$build" -DGPUQ_WERROR=ON >/dev/null
fi
# Beast translation units take ~1 GiB and ~15 s each: two jobs fit a 2-core, 24 GiB machine.
targets=()
for target in "$@"; do targets+=(--target "$target"); done
cmake --build "$build" -j "$(nproc)" "${targets[@]}"
