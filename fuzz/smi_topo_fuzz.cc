// SPDX-License-Identifier: Apache-2.0
// Fuzz target: `nvidia-smi topo -m`, read by gpu::parse_nvidia_smi_topo, and the selection of a
// daemon's GPUs from its matrix (gpu::select_links).
// Invariants: the matrix is square, a GPU scores kLinkSelf with itself and a known connection
// kind with every other; written back as nvidia-smi prints it, it parses to the same matrix;
// selecting the GPUs in reverse order reverses the matrix.
#include "fuzz_check.h"
#include "gpu/topology.h"

namespace {

using gpuq::gpu::Links;

// The cell nvidia-smi prints for a score; empty for a score no cell gives.
std::string cell_of(int score) {
  using namespace gpuq::gpu;
  if (score > kLinkNvLinkBase) return fmt::format("NV{}", score - kLinkNvLinkBase);
  switch (score) {
    case kLinkPix: return "PIX";
    case kLinkPxb: return "PXB";
    case kLinkPhb: return "PHB";
    case kLinkNode: return "NODE";
    case kLinkSys: return "SYS";
    default: return "";
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = gpuq::fuzz::as_text(data, size);
  auto links = gpuq::gpu::parse_nvidia_smi_topo(text);
  if (!gpuq::fuzz::parsed_or_failed_with(links, gpuq::Code::kCorruption)) return 0;
  const size_t n = links->size();
  std::string written = "\t";
  for (size_t i = 0; i < n; ++i) written += fmt::format("GPU{}\t", i);
  written += "CPU Affinity\n";
  for (size_t i = 0; i < n; ++i) {
    FUZZ_CHECK((*links)[i].size() == n, "row {} has {} cells in a matrix of {}", i,
               (*links)[i].size(), n);
    written += fmt::format("GPU{}", i);
    for (size_t j = 0; j < n; ++j) {
      int score = (*links)[i][j];
      if (i == j) {
        FUZZ_CHECK(score == gpuq::gpu::kLinkSelf, "GPU{} scores {} with itself", i, score);
        written += "\t X ";
        continue;
      }
      std::string cell = cell_of(score);
      FUZZ_CHECK(!cell.empty(), "GPU{}-GPU{} scores {}, which no connection gives", i, j, score);
      written += "\t" + cell;
    }
    written += "\t0-7\n";
  }
  written += "\nLegend:\n\n  X    = Self\n";
  auto again = gpuq::gpu::parse_nvidia_smi_topo(written);
  FUZZ_CHECK(again.has_value() && *again == *links, "the matrix written back as\n{}reads as {}",
             written, again ? "another matrix" : again.error().message);

  std::vector<int> reversed;
  for (size_t i = n; i-- > 0;) reversed.push_back(static_cast<int>(i));
  auto selected = gpuq::gpu::select_links(*links, reversed);
  FUZZ_CHECK(selected.has_value(), "select_links refused its own matrix: {}",
             selected ? "" : selected.error().message);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      FUZZ_CHECK((*selected)[i][j] == (*links)[n - 1 - i][n - 1 - j], "select_links moved a cell");
    }
  }
  return 0;
}
