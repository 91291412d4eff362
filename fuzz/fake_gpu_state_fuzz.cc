// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the fake GPU state file ($GPUQ_FAKE_GPU_STATE, read by the fake probe at every
// sample). The first byte chooses the fake's GPU count (0..16); the rest is the file's text,
// handed to gpu::parse_fake_gpu_state as FakeProbe::sample() hands it.
// Invariants: a sample has one entry per GPU in index order, with memory >= 0, utilisation in
// -1..100 and positive pids; written back in the file's form it reads as the same sample; an
// error is kInvalidArgument naming the variable and the file.
#include <nlohmann/json.hpp>

#include "fuzz_check.h"
#include "gpu/fake_probe.h"

namespace {

using nlohmann::json;

constexpr std::string_view kSource = "/fuzz/gpu-state.json";

json write_back(const gpuq::gpu::ProbeSample& sample) {
  json gpus = json::array();
  for (const auto& gpu : sample.gpus) {
    json processes = json::array();
    for (const auto& p : gpu.processes) {
      processes.push_back({{"pid", p.pid}, {"used_memory_mib", p.used_memory_mib}});
    }
    gpus.push_back({{"index", gpu.index},
                    {"memory_used_mib", gpu.memory_used_mib},
                    {"utilization", gpu.utilization},
                    {"processes", std::move(processes)}});
  }
  return {{"gpus", std::move(gpus)}};
}

bool same(const gpuq::gpu::ProbeSample& a, const gpuq::gpu::ProbeSample& b) {
  return write_back(a) == write_back(b);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int gpu_count = data[0] % 17;
  std::string_view text = gpuq::fuzz::as_text(data + 1, size - 1);
  auto sample = gpuq::gpu::parse_fake_gpu_state(text, gpu_count, kSource);
  if (!gpuq::fuzz::parsed_or_failed_with(sample, gpuq::Code::kInvalidArgument)) {
    FUZZ_CHECK(sample.error().message.rfind(fmt::format("GPUQ_FAKE_GPU_STATE file {}: ", kSource),
                                            0) == 0,
               "the error does not name the file: {}", sample.error().message);
    return 0;
  }
  FUZZ_CHECK(static_cast<int>(sample->gpus.size()) == gpu_count, "{} GPUs in a sample of {}",
             sample->gpus.size(), gpu_count);
  for (int i = 0; i < gpu_count; ++i) {
    const auto& gpu = sample->gpus[i];
    FUZZ_CHECK(gpu.index == i, "entry {} is GPU {}", i, gpu.index);
    FUZZ_CHECK(gpu.memory_used_mib >= 0 && gpu.utilization >= -1 && gpu.utilization <= 100,
               "GPU {}: {} MiB, utilisation {}", i, gpu.memory_used_mib, gpu.utilization);
    for (const auto& p : gpu.processes) {
      FUZZ_CHECK(p.pid > 0 && p.used_memory_mib >= 0, "GPU {}: process {} with {} MiB", i, p.pid,
                 p.used_memory_mib);
    }
  }
  std::string written = write_back(*sample).dump();
  auto again = gpuq::gpu::parse_fake_gpu_state(written, gpu_count, kSource);
  FUZZ_CHECK(again.has_value(), "the sample written back as {} does not read: {}", written,
             again ? "" : again.error().message);
  FUZZ_CHECK(same(*sample, *again), "the sample written back as {} reads as {}", written,
             write_back(*again).dump());
  return 0;
}
