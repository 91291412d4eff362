#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The test command: installs what is missing, builds, and runs every test (unit and end-to-end:
# real daemons, real processes, simulated GPUs, the dashboard in a headless chromium) with CTest,
# then says which tests did not run and why (scripts/test-summary.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
# The dashboard's browser tests (tests/web) drive Debian's chromium with playwright-core. The
# container tests (tests/containers) run a real podman, with runc (crun refuses some machines'
# cgroup layout), netavark (podman's network stack: without it even `podman import` fails, and
# it is only a recommendation) and a static busybox as the image's one binary. The fleet's tests
# (tests/fleet) serve S3 with moto, in python3 (python3-venv: see below).
bash scripts/install-deps.sh --tests chromium task-spooler podman runc netavark busybox-static \
  python3 python3-venv
bash scripts/build.sh
build="${GPUQ_BUILD_DIR:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac

# moto is not a Debian package: when this python3 cannot import its server, it is installed from
# PyPI into a virtual environment in the build directory, whose python3 the tests then find
# first on the PATH. Where PyPI cannot be reached either, the fleet's S3 tests skip, and the
# summary at the end names them with that reason.
has_moto() { "$1" -c 'import moto.moto_server.werkzeug_app, werkzeug' 2>/dev/null; }
if ! has_moto python3; then
  venv="$build/test-python"
  if ! has_moto "$venv/bin/python3"; then
    echo "gpuq: python3 has no moto (the fleet's tests need its S3 server): installing it into $venv"
    python3 -m venv "$venv" && "$venv/bin/python3" -m pip install -q 'moto[server]' ||
      echo "gpuq: could not install moto from PyPI; the fleet's S3 tests will skip (see the summary)" >&2
  fi
  if has_moto "$venv/bin/python3"; then export PATH="$venv/bin:$PATH"; fi
fi

cd "$build"
status=0
ctest --output-on-failure -j "$(nproc)" --timeout 300 || status=$?
bash "$root/scripts/test-summary.sh" "$build"
exit "$status"
