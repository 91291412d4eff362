#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds gpuq's release artifacts into dist/ (docs/install.md says how to use them):
#   gpuq-VERSION-linux-x86_64.tar.gz        bin/gpuq (the light client, static) and
#                                            libexec/gpuq/gpuqd (the daemon and every other command;
#                                            it loads only the C library's own libraries) and
#                                            libexec/gpuq/gpuq-shim (each run's supervisor, static),
#                                            all stripped; share/doc/gpuq (README, CHANGELOG,
#                                            LICENSE, NOTICE, docs, examples), man pages, bash/zsh/fish
#                                            completions, share/gpuq/gpuq.service (a system unit
#                                            for an unpack into /usr/local)
#   gpuq-VERSION-linux-x86_64-debug.tar.gz  bin/gpuq.debug, libexec/gpuq/gpuqd.debug and
#                                            libexec/gpuq/gpuq-shim.debug: unpacked
#                                            over the first, gdb finds them
#   gpuq_VERSION-N_amd64.deb                with --deb (packaging/deb/), checked by lintian
# VERSION is project()'s in CMakeLists.txt. The binary is the build tree's (default build/, as
# scripts/build.sh makes it): the target gpuq (which builds gpuqd and gpuq-shim too) is built first unless
# --no-build is given, and refused unless tests/release/portable_binary.sh passes. SOURCE_DATE_EPOCH (default: the
# commit's time) dates every file, so the archives are reproducible.
# Usage: scripts/release.sh [--deb] [--build-dir DIR] [--out DIR] [--no-build]
#                           [--deb-revision N]   (the .deb's version VERSION-N; default 1)
set -euo pipefail
umask 022  # the archives' modes do not follow the builder's umask
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${GPUQ_BUILD_DIR:-build}"
out=dist
deb=0
compile=1
revision=1
usage() {
  sed -n 's/^# \{0,1\}//; /^Usage:/,/^$/p' "$0" | sed -n '1,2p'
}
while [ $# -gt 0 ]; do
  case "$1" in
    --deb) deb=1 ;;
    --build-dir) build="$2"; shift ;;
    --out) out="$2"; shift ;;
    --no-build) compile=0 ;;
    --deb-revision) revision="$2"; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "release.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
cd "$root"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
case "$out" in /*) ;; *) out="$root/$out" ;; esac
[[ "$revision" =~ ^[0-9]+$ ]] || { echo "release.sh: --deb-revision takes a number, not '$revision'" >&2; exit 2; }

version=$(sed -n 's/^project(gpuq VERSION \([0-9][0-9.]*\) .*/\1/p' CMakeLists.txt)
[ -n "$version" ] || { echo "release.sh: no version in CMakeLists.txt's project()" >&2; exit 1; }
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || date +%s)
fi
export SOURCE_DATE_EPOCH

if [ "$compile" -eq 1 ]; then
  if [ ! -f "$build/build.ninja" ]; then
    bash scripts/install-deps.sh --tests
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUQ_WERROR=ON >/dev/null
  fi
  cmake --build "$build" --target gpuq
fi
binary="$build/bin/gpuq"  # the light client
full="$build/bin/gpuqd"   # the full binary it execs
shim="$build/bin/gpuq-shim"  # each run's supervisor, which gpuqd starts
for file in "$binary" "$full" "$shim"; do
  [ -x "$file" ] || { echo "release.sh: no $(basename "$file") binary at $file (build it, or drop --no-build)" >&2; exit 1; }
done
bash tests/release/portable_binary.sh "$binary" "$full" "$shim" >/dev/null || {
  echo "release.sh: $binary, $full or $shim is not portable (tests/release/portable_binary.sh says why); not packaged" >&2
  exit 1
}

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$out"

# Lays out an installed gpuq under PREFIX_DIR, for the prefix the unit names (/usr/local or
# /usr) and zsh's completion directory there.
lay_out() {
  local dir="$1" prefix="$2" zsh_dir="$3"
  install -d "$dir/bin" "$dir/libexec/gpuq" "$dir/share/doc/gpuq/examples" "$dir/share/man/man1" \
    "$dir/share/bash-completion/completions" "$dir/$zsh_dir" "$dir/share/fish/vendor_completions.d"
  objcopy --strip-all --add-gnu-debuglink="$stage/gpuq.debug" "$binary" "$dir/bin/gpuq"
  objcopy --strip-all --add-gnu-debuglink="$stage/gpuqd.debug" "$full" "$dir/libexec/gpuq/gpuqd"
  objcopy --strip-all --add-gnu-debuglink="$stage/gpuq-shim.debug" "$shim" "$dir/libexec/gpuq/gpuq-shim"
  chmod 0755 "$dir/bin/gpuq" "$dir/libexec/gpuq/gpuqd" "$dir/libexec/gpuq/gpuq-shim"
  install -m 0644 README.md CHANGELOG.md LICENSE NOTICE docs/*.md "$dir/share/doc/gpuq/"
  cp -r examples/. "$dir/share/doc/gpuq/examples/"
  "$dir/bin/gpuq" manpages --dir "$dir/share/man/man1" >/dev/null
  gzip -9n "$dir"/share/man/man1/*.1
  "$dir/bin/gpuq" completion bash >"$dir/share/bash-completion/completions/gpuq"
  "$dir/bin/gpuq" completion zsh >"$dir/$zsh_dir/_gpuq"
  "$dir/bin/gpuq" completion fish >"$dir/share/fish/vendor_completions.d/gpuq.fish"
  unit_for "$prefix" >"$dir/gpuq.service"
}
# The system unit for a gpuq installed under PREFIX: the box's daemon (root, --system), state
# in /var/lib/gpuq.
unit_for() {
  "$binary" service install --print --home /var/lib/gpuq --executable "$1/bin/gpuq"
}
# A reproducible tar.gz of DIR's contents under the name NAME.
pack() {
  local dir="$1" name="$2" file="$3"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mode='u+rwX,go+rX,go-w' --mtime="@$SOURCE_DATE_EPOCH" \
    --transform "s,^\.,$name," -C "$dir" -cf - . | gzip -9n >"$file"
}

objcopy --only-keep-debug --compress-debug-sections=zlib "$binary" "$stage/gpuq.debug"
objcopy --only-keep-debug --compress-debug-sections=zlib "$full" "$stage/gpuqd.debug"
objcopy --only-keep-debug --compress-debug-sections=zlib "$shim" "$stage/gpuq-shim.debug"

name="gpuq-$version-linux-x86_64"
tree="$stage/tarball"
lay_out "$tree" /usr/local share/zsh/site-functions
install -d "$tree/share/gpuq"
mv "$tree/gpuq.service" "$tree/share/gpuq/gpuq.service"
pack "$tree" "$name" "$out/$name.tar.gz"
install -d "$stage/debug/bin" "$stage/debug/libexec/gpuq"
install -m 0644 "$stage/gpuq.debug" "$stage/debug/bin/gpuq.debug"
install -m 0644 "$stage/gpuqd.debug" "$stage/debug/libexec/gpuq/gpuqd.debug"
install -m 0644 "$stage/gpuq-shim.debug" "$stage/debug/libexec/gpuq/gpuq-shim.debug"
pack "$stage/debug" "$name" "$out/$name-debug.tar.gz"
echo "$out/$name.tar.gz"
echo "$out/$name-debug.tar.gz"

[ "$deb" -eq 1 ] || exit 0
# The .deb: the same files under /usr, the unit in /lib/systemd/system (not enabled), the
# maintainer scripts and package metadata of packaging/deb/.
command -v lintian >/dev/null || { echo "release.sh: --deb checks the package with lintian: apt-get install lintian" >&2; exit 1; }
debver="$version-$revision"
# Who maintains the package: one line, kept in one place (the control file and Debian's
# changelog both name it).
maintainer=$(head -n 1 packaging/maintainer)
[ -n "$maintainer" ] || { echo "release.sh: packaging/maintainer is empty: write 'Name <email>' there" >&2; exit 1; }
pkg="$stage/deb"
lay_out "$pkg/usr" /usr share/zsh/vendor-completions
install -d "$pkg/lib/systemd/system" "$pkg/DEBIAN" "$pkg/usr/share/lintian/overrides"
mv "$pkg/usr/gpuq.service" "$pkg/lib/systemd/system/gpuq.service"
chmod 0644 "$pkg/lib/systemd/system/gpuq.service"
install -m 0644 packaging/deb/copyright "$pkg/usr/share/doc/gpuq/copyright"
# Debian's copyright file carries the license and names /usr/share/common-licenses/Apache-2.0:
# a second copy of its text would be one lintian refuses.
rm "$pkg/usr/share/doc/gpuq/LICENSE"
install -m 0644 packaging/deb/lintian-overrides "$pkg/usr/share/lintian/overrides/gpuq"
# Debian's changelog names the package's versions; CHANGELOG.md (beside it) says what changed.
{
  echo "gpuq ($debver) unstable; urgency=medium"
  echo
  echo "  * gpuq $version: the changes are in /usr/share/doc/gpuq/changelog.gz."
  echo
  echo " -- $maintainer  $(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n >"$pkg/usr/share/doc/gpuq/changelog.Debian.gz"
gzip -9n "$pkg/usr/share/doc/gpuq/CHANGELOG.md"
mv "$pkg/usr/share/doc/gpuq/CHANGELOG.md.gz" "$pkg/usr/share/doc/gpuq/changelog.gz"
for script in postinst prerm postrm; do
  install -m 0755 "packaging/deb/$script" "$pkg/DEBIAN/$script"
done
size=$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
sed -e "s/@VERSION@/$debver/" -e "s/@SIZE@/$size/" -e "s|@MAINTAINER@|$maintainer|" packaging/deb/control.in \
  >"$pkg/DEBIAN/control"
find "$pkg" -depth -newermt "@$SOURCE_DATE_EPOCH" -exec touch --no-dereference --date="@$SOURCE_DATE_EPOCH" {} +
deb_file="$out/gpuq_${debver}_amd64.deb"
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb_file" >/dev/null
# Errors fail the release; warnings are printed.
lintian_out=$(lintian --fail-on none "$deb_file" 2>&1 | grep -v '^running with root privileges' || true)
[ -z "$lintian_out" ] || echo "$lintian_out" >&2
if grep -q '^E: ' <<<"$lintian_out"; then
  echo "release.sh: lintian reports errors in $deb_file (above)" >&2
  exit 1
fi
echo "$deb_file"
