// SPDX-License-Identifier: Apache-2.0
// prepare_heap_for() against the real kernel: the heap's mapping in /proc/self/smaps.
#include "base/heap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace gpuq {
namespace {

// The [heap] of this process, as /proc/self/smaps describes it: several mappings when madvise
// gave a part of it other flags. `vm_flags` holds each part's VmFlags line.
struct Heap {
  uintptr_t begin = UINTPTR_MAX, end = 0;
  std::string vm_flags;
};

Heap read_heap() {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  Heap heap;
  bool in_heap = false;
  while (std::getline(smaps, line)) {
    if (line.find("[heap]") != std::string::npos) {
      in_heap = true;
      std::istringstream range(line.substr(0, line.find(' ')));
      std::string from, to;
      std::getline(range, from, '-');
      std::getline(range, to);
      heap.begin = std::min<uintptr_t>(heap.begin, std::stoull(from, nullptr, 16));
      heap.end = std::max<uintptr_t>(heap.end, std::stoull(to, nullptr, 16));
    } else if (in_heap && line.starts_with("VmFlags:")) {
      heap.vm_flags += line + "\n";
      in_heap = false;
    }
  }
  return heap;
}

TEST(Heap, GrowsInOnePieceAndAsksForHugePages) {
  constexpr size_t kBytes = size_t{48} << 20;
  prepare_heap_for(kBytes);
  Heap heap = read_heap();
  ASSERT_LT(heap.begin, heap.end) << "no [heap] mapping in /proc/self/smaps";
  EXPECT_GE(heap.end - heap.begin, kBytes);
  // A 4 MiB block, which glibc would map on its own by default, now comes from the heap.
  void* block = std::malloc(size_t{4} << 20);
  auto at = reinterpret_cast<uintptr_t>(block);
  EXPECT_TRUE(at >= heap.begin && at < heap.end) << std::hex << at;
  std::free(block);
  if (!std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled")) {
    GTEST_SKIP() << "this kernel has no transparent huge pages";
  }
  // "hg": the kernel recorded MADV_HUGEPAGE on (a part of) the heap.
  EXPECT_NE(heap.vm_flags.find(" hg"), std::string::npos) << heap.vm_flags;
}

}  // namespace
}  // namespace gpuq
