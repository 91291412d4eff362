// SPDX-License-Identifier: Apache-2.0
// Fuzz target: nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory, read by the smi probe's
// gpu::parse_smi_compute_apps, and its join with the GPU query (gpu::merge_smi_probe).
// Invariants: parsed processes have a UUID, a positive pid and memory >= 0; written back as
// nvidia-smi prints them they parse the same; merged with a GPU list that names every UUID they
// all land on their GPU; merged with no GPUs, any process is an error naming its line.
#include <map>

#include "fuzz_check.h"
#include "gpu/smi_probe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = gpuq::fuzz::as_text(data, size);
  auto apps = gpuq::gpu::parse_smi_compute_apps(text);
  if (!gpuq::fuzz::parsed_or_failed_with(apps, gpuq::Code::kCorruption)) return 0;
  std::string written;
  for (const auto& app : *apps) {
    FUZZ_CHECK(!app.gpu_uuid.empty() && app.pid > 0 && app.used_memory_mib >= 0 && app.line >= 1 &&
                   app.line <= gpuq::fuzz::line_count(text),
               "process {} on '{}' with {} MiB at line {}", app.pid, app.gpu_uuid,
               app.used_memory_mib, app.line);
    written += fmt::format("{}, {}, {}\n", app.gpu_uuid, app.pid, app.used_memory_mib);
  }
  auto again = gpuq::gpu::parse_smi_compute_apps(written);
  FUZZ_CHECK(again.has_value() && again->size() == apps->size(),
             "the processes written back as\n{}do not parse the same: {}", written,
             again ? "" : again.error().message);
  for (size_t i = 0; i < apps->size(); ++i) {
    const auto& a = (*apps)[i];
    const auto& b = (*again)[i];
    FUZZ_CHECK(a.gpu_uuid == b.gpu_uuid && a.pid == b.pid && a.used_memory_mib == b.used_memory_mib,
               "process line {} of\n{}reads back differently", i + 1, written);
  }

  // One GPU per UUID, indices in reverse order of first sight so the merge has to sort.
  std::map<std::string, size_t> processes_on;
  for (const auto& app : *apps) ++processes_on[app.gpu_uuid];
  std::vector<gpuq::gpu::SmiGpuRow> gpus;
  int index = static_cast<int>(processes_on.size());
  for (const auto& [uuid, count] : processes_on) gpus.push_back({--index, uuid, 0, -1});
  auto sample = gpuq::gpu::merge_smi_probe(gpus, *apps);
  FUZZ_CHECK(sample.has_value(), "merge failed with every UUID listed: {}",
             sample ? "" : sample.error().message);
  FUZZ_CHECK(sample->gpus.size() == gpus.size(), "{} GPUs merged into {}", gpus.size(),
             sample->gpus.size());
  for (size_t i = 0; i < sample->gpus.size(); ++i) {
    FUZZ_CHECK(sample->gpus[i].index == static_cast<int>(i), "merged GPUs out of index order");
  }
  auto lonely = gpuq::gpu::merge_smi_probe({}, *apps);
  FUZZ_CHECK(lonely.has_value() == apps->empty(), "merge with no GPUs: {}",
             lonely ? "succeeded" : lonely.error().message);
  return 0;
}
