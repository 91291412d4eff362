// SPDX-License-Identifier: Apache-2.0
// Fuzz target: nvidia-smi's --query-gpu CSV, both readers of it: discovery's
// gpu::parse_nvidia_smi_gpus (index, uuid, name, memory.total, memory.used) and the smi probe's
// gpu::parse_smi_probe_gpus (index, uuid, memory.used, utilization.gpu, temperature.gpu,
// power.draw), plus the texts that
// tell a missing driver or no GPU. The same bytes go to each, as nvidia-smi's output would.
// Invariants: a parsed list has distinct indices, named gpu<index>, non-negative memory and
// utilisation in -1..100, temperature and power -1 (unknown) or non-negative; written back as nvidia-smi prints it, it parses to the same list.
#include <set>

#include "fuzz_check.h"
#include "gpu/nvidia_smi.h"
#include "gpu/smi_probe.h"

namespace {

void check_discovery_list(std::string_view text) {
  auto gpus = gpuq::gpu::parse_nvidia_smi_gpus(text);
  if (!gpuq::fuzz::parsed_or_failed_with(gpus, gpuq::Code::kCorruption)) return;
  std::set<int> indices;
  std::string written;
  for (const auto& gpu : *gpus) {
    FUZZ_CHECK(gpu.index.has_value() && *gpu.index >= 0 && indices.insert(*gpu.index).second,
               "a missing, negative or repeated index in {}", text);
    FUZZ_CHECK(gpu.name == fmt::format("gpu{}", *gpu.index), "GPU {} is named {}", *gpu.index,
               gpu.name);
    FUZZ_CHECK(!gpu.uuid.empty() && !gpu.model.empty() && gpu.memory_total_mib >= 0 &&
                   gpu.memory_used_mib >= 0,
               "GPU {}: uuid '{}', model '{}', {}/{} MiB", *gpu.index, gpu.uuid, gpu.model,
               gpu.memory_used_mib, gpu.memory_total_mib);
    written += fmt::format("{}, {}, {}, {}, {}\n", *gpu.index, gpu.uuid, gpu.model,
                           gpu.memory_total_mib, gpu.memory_used_mib);
  }
  auto again = gpuq::gpu::parse_nvidia_smi_gpus(written);
  FUZZ_CHECK(again.has_value(), "the list written back as\n{}does not parse: {}", written,
             again ? "" : again.error().message);
  FUZZ_CHECK(again->size() == gpus->size(), "{} GPUs read back as {}", gpus->size(),
             again->size());
  for (size_t i = 0; i < gpus->size(); ++i) {
    const auto& a = (*gpus)[i];
    const auto& b = (*again)[i];
    FUZZ_CHECK(a.name == b.name && a.index == b.index && a.uuid == b.uuid && a.model == b.model &&
                   a.memory_total_mib == b.memory_total_mib &&
                   a.memory_used_mib == b.memory_used_mib,
               "GPU line {} of\n{}reads back differently", i + 1, written);
  }
}

void check_probe_list(std::string_view text) {
  auto rows = gpuq::gpu::parse_smi_probe_gpus(text);
  if (!gpuq::fuzz::parsed_or_failed_with(rows, gpuq::Code::kCorruption)) return;
  std::set<int> indices;
  std::set<std::string> uuids;
  std::string written;
  for (const auto& row : *rows) {
    FUZZ_CHECK(row.index >= 0 && indices.insert(row.index).second && !row.uuid.empty() &&
                   uuids.insert(row.uuid).second,
               "a negative or repeated index or UUID: {} {}", row.index, row.uuid);
    FUZZ_CHECK(row.memory_used_mib >= 0 && row.utilization >= -1 && row.utilization <= 100,
               "GPU {}: {} MiB, utilisation {}", row.index, row.memory_used_mib, row.utilization);
    FUZZ_CHECK(row.temperature_c >= -1 && (row.power_w >= 0 || row.power_w == -1),
               "GPU {}: {} C, {} W", row.index, row.temperature_c, row.power_w);
    auto known = [](auto value) {
      return value < 0 ? std::string("[N/A]") : fmt::format("{}", value);
    };
    written += fmt::format("{}, {}, {}, {}, {}, {}\n", row.index, row.uuid, row.memory_used_mib,
                           known(row.utilization), known(row.temperature_c), known(row.power_w));
  }
  auto again = gpuq::gpu::parse_smi_probe_gpus(written);
  FUZZ_CHECK(again.has_value() && again->size() == rows->size(),
             "the rows written back as\n{}do not parse the same: {}", written,
             again ? "" : again.error().message);
  for (size_t i = 0; i < rows->size(); ++i) {
    const auto& a = (*rows)[i];
    const auto& b = (*again)[i];
    FUZZ_CHECK(a.index == b.index && a.uuid == b.uuid && a.memory_used_mib == b.memory_used_mib &&
                   a.utilization == b.utilization && a.temperature_c == b.temperature_c &&
                   a.power_w == b.power_w,
               "row {} of\n{}reads back differently", i + 1, written);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = gpuq::fuzz::as_text(data, size);
  check_discovery_list(text);
  check_probe_list(text);
  // What discovery looks at when nvidia-smi fails: these must not throw on any text.
  (void)gpuq::gpu::is_driver_missing_text(text);
  (void)gpuq::gpu::is_no_devices_text(text);
  std::string first = gpuq::gpu::first_line(text);
  FUZZ_CHECK(first.find('\n') == std::string::npos, "first_line kept a newline: {}", first);
  return 0;
}
