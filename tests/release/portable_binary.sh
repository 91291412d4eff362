#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks that gpuq's binaries run on any x86_64 Linux with glibc 2.34 or later (docs/install.md):
# a static binary (the light client, bin/gpuq; the shim, gpuq-shim) needs nothing, so it may not
# look users up either (glibc's NSS would load the build machine's modules at run time); a
# dynamic one (gpuqd) needs only
# the C library's own shared libraries (libc, libm, the dynamic loader, libgcc_s), and no symbol
# it imports needs a glibc version above 2.34 (nor a GCC runtime version above GCC_4.2.0).
# Prints every offender and exits 1; exit 0 when every binary given is portable.
#   tests/release/portable_binary.sh build/bin/gpuq build/bin/gpuqd build/bin/gpuq-shim
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: portable_binary.sh BINARY..." >&2; exit 2; }
allowed_libraries=" libc.so.6 libm.so.6 ld-linux-x86-64.so.2 libgcc_s.so.1 "

# Checks one binary; prints what is wrong and returns 1, or says it is portable.
check() {
  local binary="$1" failed=0
  if ! readelf -l "$binary" | grep -q INTERP; then
    # Static: no loader, so no shared library and no symbol imported from one.
    if readelf -d "$binary" | grep -q NEEDED; then
      echo "$binary has no loader but needs shared libraries"
      return 1
    fi
    local lookups
    lookups=$(nm "$binary" 2>/dev/null | awk '$3 ~ /^(getpwnam_r|getpwuid_r|getgrouplist|getgrnam_r|__nss_configure_lookup)$/ {print $3}' | paste -sd' ')
    if [ -n "$lookups" ]; then
      echo "$binary is static but looks users up ($lookups): NSS needs the build machine's glibc at run time"
      return 1
    fi
    echo "$binary is portable: statically linked"
    return 0
  fi
  while read -r library; do
    if [[ "$allowed_libraries" != *" $library "* ]]; then
      echo "$binary needs the shared library $library: only libc, libm, the loader and libgcc_s are allowed"
      failed=1
    fi
  done < <(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')

  # Each imported symbol's version, e.g. "GLIBC_2.34 __libc_start_main".
  while read -r version symbol; do
    case "$version" in
      GLIBC_*)
        if ! printf '%s\n%s\n' "$version" GLIBC_2.34 | sort -V -C; then
          echo "$binary imports $symbol@$version, newer than glibc 2.34"
          failed=1
        fi ;;
      GCC_*)
        if ! printf '%s\n%s\n' "$version" GCC_4.2.0 | sort -V -C; then
          echo "$binary imports $symbol@$version from libgcc_s, newer than GCC_4.2.0"
          failed=1
        fi ;;
      *)
        echo "$binary imports $symbol@$version: a library version nothing allows"
        failed=1 ;;
    esac
  done < <(objdump -T "$binary" | awk '$0 ~ /\*UND\*/ && $0 ~ /\(/ {
    v = $0; sub(/.*\(/, "", v); sub(/\).*/, "", v); print v, $NF }')

  if [ "$failed" -eq 0 ]; then
    echo "$binary is portable: $(readelf -d "$binary" | grep -c NEEDED) shared libraries, glibc 2.34 at most"
  fi
  return "$failed"
}

status=0
for binary in "$@"; do
  check "$binary" || status=1
done
exit "$status"
