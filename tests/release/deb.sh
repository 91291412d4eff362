#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The .deb through its life on this machine: scripts/release.sh --deb builds it (lintian errors
# fail that), `apt-get install ./gpuq_*.deb` installs it (group gpuq, /var/lib/gpuq root's, the
# unit a root --system daemon, not enabled, man pages, completions), its daemon starts (the
# service where systemd runs, else by hand as the unit would run it, which is said), a member of
# the group gpuq submits a job through the system socket, found by itself, a rebuilt package is installed
# over it and the daemon restarted on the new binary while the job runs (the job survives and
# succeeds with one run), and `apt-get remove` then purge take it away (purge: the state too).
# Needs root and apt; skipped (exit 77) otherwise, and when a gpuq package is installed already
# (this test would replace it). Usage: deb.sh BUILD_DIR
set -euo pipefail
build="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
skip() {
  echo "skipped: $*" >&2
  exit 77
}
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
[ "$(id -u)" -eq 0 ] || skip "installing a package needs root"
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || skip "no apt-get or dpkg-deb here"
command -v lintian >/dev/null || skip "lintian is not installed (scripts/install-deps.sh installs it)"
if dpkg-query -W -f '${Status}' gpuq 2>/dev/null | grep -q "ok installed"; then
  skip "a gpuq package is installed on this machine; this test would replace it"
fi
group_existed=0
getent group gpuq >/dev/null && group_existed=1
member="gpuqt-deb-$$"
systemd=0
[ -d /run/systemd/system ] && systemd=1

work=$(mktemp -d)
chmod 0755 "$work"
jobdir="$work/job"
mkdir "$jobdir"
# Without systemd the daemon is started by hand, on a socket of this test's own.
[ "$systemd" -eq 1 ] || export GPUQ_SYSTEM_SOCKET="$work/run/gpuq.sock"
# The member submits without --home: the CLI finds the system socket by itself.
q() { runuser -u "$member" -- env HOME=/nonexistent GPUQ_SYSTEM_SOCKET="${GPUQ_SYSTEM_SOCKET:-}" /usr/bin/gpuq "$@"; }
stop_daemon() {
  if [ "$systemd" -eq 1 ]; then
    systemctl stop gpuq.service 2>/dev/null || true
  elif [ -f /var/lib/gpuq/daemon.lock ]; then
    local pid
    pid=$(cat /var/lib/gpuq/daemon.lock 2>/dev/null || true)
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  fi
}
start_daemon() {
  if [ "$systemd" -eq 1 ]; then
    systemctl start gpuq.service
  else
    /usr/bin/gpuq --home /var/lib/gpuq daemon --system --detach --gpus fake:2
  fi
}
cleanup() {
  set +e  # everything is tried; the test's own status stands
  [ -f "$jobdir/pid" ] && kill "$(cat "$jobdir/pid")" 2>/dev/null
  stop_daemon
  if dpkg-query -W gpuq >/dev/null 2>&1; then dpkg --purge gpuq >/dev/null 2>&1 || true; fi
  getent passwd "$member" >/dev/null && userdel "$member" >/dev/null 2>&1
  if [ "$group_existed" -eq 0 ] && getent group gpuq >/dev/null; then delgroup --system --quiet gpuq >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

"$root/scripts/release.sh" --no-build --build-dir "$build" --deb --out "$work/one" >"$work/made" 2>&1 ||
  fail "release.sh --deb: $(cat "$work/made")"
"$root/scripts/release.sh" --no-build --build-dir "$build" --deb --deb-revision 2 --out "$work/two" >"$work/made" 2>&1 ||
  fail "release.sh --deb --deb-revision 2: $(cat "$work/made")"
first=$(ls "$work"/one/gpuq_*-1_amd64.deb)
second=$(ls "$work"/two/gpuq_*-2_amd64.deb)
install_deb() {
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$1" >"$work/apt.log" 2>&1 ||
    fail "apt-get install $1: $(cat "$work/apt.log")"
}

# Install.
install_deb "$first"
[ -x /usr/bin/gpuq ] || fail "no /usr/bin/gpuq"
[ -x /usr/libexec/gpuq/gpuqd ] || fail "no /usr/libexec/gpuq/gpuqd (the full binary /usr/bin/gpuq execs)"
[ -x /usr/libexec/gpuq/gpuq-shim ] || fail "no /usr/libexec/gpuq/gpuq-shim (each run's shim, which gpuqd starts)"
getent group gpuq >/dev/null || fail "no group gpuq"
[ "$(stat -c '%U %a' /var/lib/gpuq)" = "root 711" ] || fail "/var/lib/gpuq is $(stat -c '%U %a' /var/lib/gpuq)"
grep -qx "ExecStart=/usr/bin/gpuq daemon --system --home /var/lib/gpuq" /lib/systemd/system/gpuq.service || fail "the unit does not run /usr/bin/gpuq daemon --system"
! grep -q "^User=" /lib/systemd/system/gpuq.service || fail "the unit does not run as root"
useradd -M -N -g gpuq -s /bin/sh "$member" || fail "useradd $member"
[ ! -e /etc/systemd/system/multi-user.target.wants/gpuq.service ] || fail "the package enabled the unit"
for file in /usr/share/man/man1/gpuq.1.gz /usr/share/man/man1/gpuq-submit.1.gz \
            /usr/share/bash-completion/completions/gpuq /usr/share/zsh/vendor-completions/_gpuq \
            /usr/share/fish/vendor_completions.d/gpuq.fish /usr/share/doc/gpuq/runbook.md \
            /usr/share/doc/gpuq/NOTICE; do
  [ -s "$file" ] || fail "no $file"
done
grep -qx "License: Apache-2.0" /usr/share/doc/gpuq/copyright || fail "the package's copyright names no Apache-2.0 license"
maintainer=$(dpkg-query -W -f '${Maintainer}' gpuq)
[ "$maintainer" = "$(head -n 1 "$root/packaging/maintainer")" ] || fail "the package's Maintainer is '$maintainer', not packaging/maintainer's"

# Start, and a job that runs until told to finish.
if [ "$systemd" -eq 0 ]; then
  echo "systemd is not running here: the daemon is started as the unit would run it (root, --system, /var/lib/gpuq)"
fi
start_daemon
chown "$member" "$jobdir"
id=$(cd "$jobdir" && q submit --id-only --gpus 0 -- sh -c 'echo $$ > pid; while [ ! -e go ]; do sleep 0.05; done; echo finished')
for _ in $(seq 200); do [ -s "$jobdir/pid" ] && break; sleep 0.05; done
[ -s "$jobdir/pid" ] || fail "job $id did not start: $(q show "$id" 2>&1)"
[ "$(q show --json "$id" | grep -o '"user":"[^"]*"')" = "\"user\":\"$member\"" ] || fail "job $id is not $member's"
old_daemon=$(cat /var/lib/gpuq/daemon.lock)

# Upgrade to the rebuilt package while it runs; the daemon restarts on the new binary.
install_deb "$second"
[ "$(dpkg-query -W -f '${Version}' gpuq)" = "$(basename "$second" | cut -d_ -f2)" ] || fail "the upgrade did not install $second"
if [ "$systemd" -eq 0 ]; then
  echo "systemd is not running here: the daemon is restarted by hand, as postinst's try-restart would"
  stop_daemon
  start_daemon
fi
for _ in $(seq 200); do q status >/dev/null 2>&1 && break; sleep 0.05; done
new_daemon=$(cat /var/lib/gpuq/daemon.lock)
[ "$new_daemon" != "$old_daemon" ] || fail "the daemon was not restarted by the upgrade"
kill -0 "$(cat "$jobdir/pid")" 2>/dev/null || fail "the upgrade killed job $id"
touch "$jobdir/go"
q wait --timeout 60s "$id" >/dev/null || fail "job $id did not succeed after the upgrade: $(q show "$id" 2>&1)"
runs=$(q show --json "$id" | grep -o '"outcome":"[a-z-]*"' | tr '\n' ' ')
[ "$runs" = '"outcome":"succeeded" ' ] || fail "job $id's runs: $runs (one succeeded run expected)"
q events --json | grep -q '"kind":"job.adopted"' || fail "the new daemon did not adopt job $id"

# Remove keeps the state; purge removes it.
stop_daemon
DEBIAN_FRONTEND=noninteractive apt-get remove -y -q gpuq >"$work/apt.log" 2>&1 || fail "apt-get remove: $(cat "$work/apt.log")"
[ ! -e /usr/bin/gpuq ] || fail "/usr/bin/gpuq is left after remove"
[ ! -e /usr/libexec/gpuq ] || fail "/usr/libexec/gpuq is left after remove"
[ ! -e /lib/systemd/system/gpuq.service ] || fail "the unit is left after remove"
[ -d /var/lib/gpuq ] || fail "remove took the state directory (only purge may)"
DEBIAN_FRONTEND=noninteractive apt-get purge -y -q gpuq >"$work/apt.log" 2>&1 || fail "apt-get purge: $(cat "$work/apt.log")"
[ ! -e /var/lib/gpuq ] || fail "purge left /var/lib/gpuq"
echo "ok: installed, ran job $id across an upgrade, removed and purged"
