// SPDX-License-Identifier: Apache-2.0
// The heap of a short command that builds many small objects at once (a plan of thousands of
// jobs, a long trace): prepare_heap_for() grows the heap in one piece and asks the kernel for
// transparent huge pages on it, so that it is touched in 2 MiB faults, not 4 KiB ones. On this
// project's VMs a page fault costs 30-90 us: `gpuq simulate` of a 3,000-job plan took 3,966
// faults (about 60 ms of its 146 ms), 609 with this. Memory the command never touches is only
// reserved (virtual), but each 2 MiB it touches is resident whole, so the long-running daemon
// does not use it. Best effort: without transparent huge pages (or with them off) it only
// leaves the heap grown. Process-wide; call it once, early, from the main thread.
#pragma once

#include <cstddef>
#include <string>

namespace gpuq {

// Makes room for about `bytes` of small allocations: glibc's main heap grows by that much at
// once, allocations up to that size come from it (not from their own mappings), it is not
// given back while the process runs, and the kernel is asked for huge pages on it.
void prepare_heap_for(size_t bytes);

// prepare_heap_for() before a file is read into objects (a plan, a trace): 64 bytes of heap per
// byte of the file (a 3,000-job plan of 400 KiB peaks at some 20 MiB), for a file of 256 KiB or
// more; for a smaller file, or one that cannot be read, nothing.
void prepare_heap_for_file(const std::string& path);

}  // namespace gpuq
