#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks that a gpuq binary runs on any x86_64 Linux with glibc 2.34 or later (docs/install.md):
# its dynamic section needs only the C library's own shared libraries (libc, libm, the dynamic
# loader, libgcc_s), and no symbol it imports needs a glibc version above 2.34 (nor a GCC
# runtime version above GCC_4.2.0). Prints every offender and exits 1; exit 0 when portable.
#   tests/release/portable_binary.sh build/bin/gpuq
set -euo pipefail
binary="$1"
allowed_libraries=" libc.so.6 libm.so.6 ld-linux-x86-64.so.2 libgcc_s.so.1 "
failed=0

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
exit "$failed"
