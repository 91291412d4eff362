// SPDX-License-Identifier: Apache-2.0
#include "base/heap.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace gpuq {
namespace {

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
constexpr size_t kMostBytes = size_t{1} << 30;
constexpr size_t kMostMmapThreshold = size_t{32} << 20;

}  // namespace

void prepare_heap_for(size_t bytes) {
  const size_t size = std::min(bytes, kMostBytes);
  // glibc refuses a mmap threshold above 32 MiB (half its largest heap): larger blocks keep
  // their own mappings.
  ::mallopt(M_MMAP_THRESHOLD, static_cast<int>(std::min(size, kMostMmapThreshold)));
  ::mallopt(M_TOP_PAD, static_cast<int>(size));
  ::mallopt(M_TRIM_THRESHOLD, static_cast<int>(2 * size));
  // A block larger than the free top of the heap (keepcost) makes glibc grow the heap, by
  // M_TOP_PAD more than the block, now. It is written to, so that the compiler cannot drop a
  // malloc whose memory is never used.
  size_t top = mallinfo2().keepcost;
  if (top >= kMostMmapThreshold) return;  // the heap has that room already
  auto* grow = static_cast<volatile char*>(std::malloc(top + 4096));
  if (grow == nullptr) return;
  grow[0] = 1;
  auto end = reinterpret_cast<uintptr_t>(::sbrk(0));
  uintptr_t begin = end > size ? end - size : 0;
  begin = (begin + kHugePage - 1) & ~(kHugePage - 1);
  if (begin < end) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
  std::free(const_cast<char*>(grow));
}

void prepare_heap_for_file(const std::string& path) {
  constexpr uintmax_t kLargeFile = 256 << 10;
  std::error_code error;
  uintmax_t size = std::filesystem::file_size(path, error);
  if (!error && size >= kLargeFile) prepare_heap_for(static_cast<size_t>(std::min<uintmax_t>(size * 64, kMostBytes)));
}

}  // namespace gpuq
