#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian 12 packages gpuq needs to build (Node.js and npm too, for the dashboard,
# when there is no node); with --tests first, also those its tests and release checks need; and
# any packages named as arguments (scripts/test.sh adds chromium's and podman's, scripts/fuzz.sh
# clang's). Idempotent: installs only what is missing (running `apt-get update` first when it
# installs anything). Needs root or sudo.
#
#   scripts/install-deps.sh                  # to build gpuq (scripts/demo.sh, scripts/build.sh)
#   scripts/install-deps.sh --tests [PKG...] # to build and test it (scripts/test.sh)
set -euo pipefail

# Build time vs run time: libsqlite3-dev and libpugixml-dev also ship the static archives gpuq
# links, and libstdc++, fmt and toml++ are linked statically or used header-only, so the binary
# loads only the C library's own (docs/install.md); libcurl4-openssl-dev gives curl.h, and its
# dependency libcurl4 is the one library a machine that runs gpuq needs for webhooks, S3
# fleets and `gpuq --url` (loaded when first used, base/libcurl.h); libssl-dev gives
# openssl/evp.h, whose libcrypto (libcurl4's own dependency) checks the fleet's transfers
# (loaded the same way, base/libcrypto.h).
# GoogleTest's headers are small and CMake's configure step looks for them, so they come with
# the build. Tests and packaging (--tests): zsh and fish run the completion scripts, groff checks
# the man pages, lintian checks the .deb (scripts/release.sh --deb), adduser runs its postinst,
# google-benchmark builds bench/, prometheus gives promtool, which checks /metrics as Prometheus
# reads it.
tests=0
if [ "${1:-}" = "--tests" ]; then
  tests=1
  shift
fi
packages=(
  build-essential cmake ninja-build git
  libboost-dev libcurl4-openssl-dev libssl-dev libsqlite3-dev nlohmann-json3-dev libcli11-dev
  libfmt-dev libexpected-dev libtomlplusplus-dev libpugixml-dev
  libgtest-dev libgmock-dev
  "$@"
)
if [ "$tests" -eq 1 ]; then
  packages+=(libbenchmark-dev zsh fish groff-base lintian adduser prometheus)
fi
# The dashboard (web/) is bundled with Node.js and npm at build time: Debian's packages, unless
# a node is already on the PATH (nodesource, nvm).
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then
    sudo="sudo"
  else
    echo "gpuq: these packages are missing and I am not root (and there is no sudo): ${missing[*]}" >&2
    exit 1
  fi
fi
echo "gpuq: installing ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
