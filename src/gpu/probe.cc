// SPDX-License-Identifier: Apache-2.0
#include "gpu/probe.h"

#include <fmt/format.h>

#include "gpu/fake_probe.h"
#include "gpu/nvml_probe.h"
#include "gpu/smi_probe.h"

namespace gpuq::gpu {
namespace {

class NoneProbe final : public GpuProbe {
 public:
  Result<ProbeSample> sample() override { return ProbeSample{}; }
  std::string name() const override { return "none"; }
};

}  // namespace

std::unique_ptr<GpuProbe> make_none_probe() { return std::make_unique<NoneProbe>(); }

ProbeChoice choose_probe(const Inventory& inventory, CommandFn run) {
  if (inventory.mode == "nvidia") {
    auto nvml = open_nvml_probe();
    if (nvml) return ProbeChoice{std::move(*nvml), fmt::format("nvml ({})", nvml_library())};
    return ProbeChoice{make_smi_probe(std::move(run)),
                       fmt::format("nvidia-smi (NVML unavailable: {})", nvml.error().message)};
  }
  if (inventory.mode == "fake") {
    int count = static_cast<int>(inventory.resources.size());
    return ProbeChoice{make_fake_probe(count),
                       fmt::format("fake ({} simulated GPU{}; state from ${})", count,
                                   count == 1 ? "" : "s", kFakeGpuStateEnv)};
  }
  return ProbeChoice{make_none_probe(),
                     fmt::format("none (GPU mode \"{}\": no device to probe)", inventory.mode)};
}

std::unique_ptr<GpuProbe> make_probe(const Inventory& inventory, CommandFn run) {
  return choose_probe(inventory, std::move(run)).probe;
}

}  // namespace gpuq::gpu
