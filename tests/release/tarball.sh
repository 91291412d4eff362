#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The release tarball as a new user gets it: scripts/release.sh packs the build's gpuq, the
# tarball is unpacked into an empty directory, and there, with a clean environment and a PATH
# of that directory's bin and the system's, the packed binary starts a daemon on fake:4, runs
# the example plan from the packed docs, and every job succeeds. Also: what the tarball holds,
# a stripped binary linked to its debug file, the debug tarball that matches it, and the same
# bytes from a second run.
# Usage: tarball.sh BUILD_DIR
set -euo pipefail
build="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
work=$(mktemp -d)
daemon_home="$work/state"
cleanup() {
  set +e  # everything is tried; the test's own status stands
  if [ -f "$daemon_home/daemon.lock" ]; then kill "$(cat "$daemon_home/daemon.lock")" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

"$root/scripts/release.sh" --no-build --build-dir "$build" --out "$work/dist" >"$work/made"
version=$(sed -n 's/^project(gpuq VERSION \([0-9][0-9.]*\) .*/\1/p' "$root/CMakeLists.txt")
name="gpuq-$version-linux-x86_64"
tarball="$work/dist/$name.tar.gz"
[ -f "$tarball" ] || fail "no $tarball; release.sh made: $(cat "$work/made")"

# Reproducible: a second run on the same build makes the same bytes.
"$root/scripts/release.sh" --no-build --build-dir "$build" --out "$work/again" >/dev/null
cmp -s "$tarball" "$work/again/$name.tar.gz" || fail "two runs of release.sh made different tarballs"

mkdir "$work/unpacked"
tar -xzf "$tarball" -C "$work/unpacked"
top="$work/unpacked/$name"
for file in bin/gpuq libexec/gpuq/gpuqd libexec/gpuq/gpuq-shim share/doc/gpuq/README.md share/doc/gpuq/CHANGELOG.md share/doc/gpuq/install.md \
            share/doc/gpuq/LICENSE share/doc/gpuq/NOTICE \
            share/doc/gpuq/runbook.md share/doc/gpuq/examples/plan.sh share/man/man1/gpuq.1.gz \
            share/man/man1/gpuq-submit.1.gz share/bash-completion/completions/gpuq \
            share/zsh/site-functions/_gpuq share/fish/vendor_completions.d/gpuq.fish \
            share/gpuq/gpuq.service; do
  [ -s "$top/$file" ] || fail "the tarball has no $file"
done
grep -qx "ExecStart=/usr/local/bin/gpuq daemon --system --home /var/lib/gpuq" "$top/share/gpuq/gpuq.service" ||
  fail "the unit does not run /usr/local/bin/gpuq: $(grep ExecStart "$top/share/gpuq/gpuq.service")"
grep -qx "Documentation=file:/usr/local/share/doc/gpuq/runbook.md" "$top/share/gpuq/gpuq.service" ||
  fail "the unit's Documentation= is not the runbook under /usr/local"

# Stripped, and linked to the debug file of the other tarball by name and build id: the light
# client (bin/gpuq, static), the full binary it execs (libexec/gpuq/gpuqd) and the runs' shim
# (libexec/gpuq/gpuq-shim, static).
readelf -l "$top/bin/gpuq" | grep -q INTERP && fail "bin/gpuq is not statically linked"
readelf -l "$top/libexec/gpuq/gpuq-shim" | grep -q INTERP && fail "libexec/gpuq/gpuq-shim is not statically linked"
tar -xzf "$work/dist/$name-debug.tar.gz" -C "$work/unpacked"
build_id() { readelf -n "$1" 2>/dev/null | sed -n 's/.*Build ID: //p'; }
for binary in bin/gpuq libexec/gpuq/gpuqd libexec/gpuq/gpuq-shim; do
  debug="$binary.debug"
  if readelf -S "$top/$binary" | grep -q '\.debug_info'; then fail "$binary is not stripped"; fi
  readelf -x .gnu_debuglink "$top/$binary" | grep -q "$(basename "$debug")" || fail "$binary has no debug link to $(basename "$debug")"
  [ -s "$top/$debug" ] || fail "the debug tarball puts no $debug beside $binary"
  [ -n "$(build_id "$top/$binary")" ] && [ "$(build_id "$top/$binary")" = "$(build_id "$top/$debug")" ] ||
    fail "$debug's build id differs from $binary's"
  readelf -S "$top/$debug" | grep -q '\.debug_info' || fail "$debug has no debug info"
done

# The new user: nothing of the build on the PATH, no GPUQ_ variable but the home.
mkdir "$work/home"
env -i HOME="$work/home" PATH="$top/bin:/usr/bin:/bin" GPUQ_HOME="$daemon_home" LANG=C.UTF-8 \
  bash -euo pipefail -c '
    [ "$(command -v gpuq)" = "$1/bin/gpuq" ] || { echo "gpuq is $(command -v gpuq)"; exit 1; }
    gpuq --version
    gpuq daemon --detach --gpus fake:4
    ids=$(bash "$1/share/doc/gpuq/examples/plan.sh")
    [ "$(wc -w <<<"$ids")" -eq 7 ] || { echo "the plan queued: $ids"; exit 1; }
    gpuq wait --timeout 120s $ids
    gpuq status --all
  ' _ "$top" >"$work/run.log" 2>&1 || fail "the unpacked gpuq did not run the example plan: $(cat "$work/run.log")"
grep -q "^gpuq $version (commit" "$work/run.log" || fail "gpuq --version said: $(head -2 "$work/run.log")"
grep -qx "  shims: $top/libexec/gpuq/gpuq-shim" "$work/run.log" ||
  fail "the daemon does not start its runs with the tarball's gpuq-shim: $(grep -A4 'gpuq daemon' "$work/run.log")"
echo "ok: $name ran the example plan from $top"
