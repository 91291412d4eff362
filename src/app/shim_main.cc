// SPDX-License-Identifier: Apache-2.0
// gpuq-shim: the per-run supervisor as a binary of its own (runner/shim.h), which the daemon
// starts with posix_spawn for each run: `gpuq-shim shim RUN_DIR 3`, or one run ahead as
// `gpuq-shim shim - 3`, told its run directory later (runner/spare_shim.h). A fresh, small, static
// process costs a run less than a fork of the daemon's image (no copy-on-write page faults, no
// page tables to copy, no TLB shootdowns when it writes) or a dynamic binary (no loader):
// docs/architecture.md, "Shims are exec'd, small and static". It links only the library
// gpuq_shim, which looks up no user; gpuqd runs the same code as `gpuqd shim ...`.
#include <cstdio>
#include <cstring>

#include "runner/shim.h"

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "shim") != 0) {
    std::fprintf(stderr, "gpuq-shim: started by the gpuq daemon for each run (shim RUN_DIR|- GO_FD)\n");
    return 2;
  }
  return gpuq::runner::shim_main(argc - 1, argv + 1);
}
