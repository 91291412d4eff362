#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make_test_image.sh TAG: the image the podman tests run (tests/containers/podman_test.cc):
# busybox-static and its applet links, imported with `podman import` from a tar, so no registry
# is needed. Needs root, podman and a static busybox (Debian: busybox-static).
set -eu
tag=$1
busybox=/bin/busybox
[ -x "$busybox" ] || busybox=$(command -v busybox || true)
if [ -z "$busybox" ] || ldd "$busybox" >/dev/null 2>&1; then
  echo "make_test_image.sh: needs a static busybox (Debian: apt-get install busybox-static)" >&2
  exit 1
fi
root=$(mktemp -d)
trap 'rm -rf "$root" "$root.tar"' EXIT
mkdir -p "$root/bin" "$root/tmp"
chmod 1777 "$root/tmp"
cp "$busybox" "$root/bin/busybox"
for applet in $("$root/bin/busybox" --list); do
  [ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
done
tar -C "$root" -cf "$root.tar" .
podman import --quiet "$root.tar" "$tag" >/dev/null
