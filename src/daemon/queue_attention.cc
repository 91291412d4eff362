// SPDX-License-Identifier: Apache-2.0
// GPUs in attention: a GPU whose cleanup after a run could not be confirmed (run_cleanup.cc)
// serves again only once a person has checked it (`gpuq release --attention GPU`).
#include <fmt/format.h>

#include "daemon/queue.h"

namespace gpuq::daemon {
int Queue::slot_named(const std::string& gpu) const {
  for (size_t slot = 0; slot < inventory_.resources.size(); ++slot) {
    const Resource& r = inventory_.resources[slot];
    if (r.name == gpu || (r.index && std::to_string(*r.index) == gpu)) return static_cast<int>(slot);
  }
  return -1;
}

Result<nlohmann::json> Queue::release_attention(const std::string& gpu) {
  int slot = slot_named(gpu);
  if (slot < 0) {
    std::string names;
    for (const auto& r : inventory_.resources) names += (names.empty() ? "" : ", ") + r.name;
    return fail(Code::kNotFound, fmt::format("no GPU '{}' here; the GPUs are: {}", gpu,
                                             names.empty() ? "(none)" : names));
  }
  const std::string& name = inventory_.resources[slot].name;
  if (health_[slot].attention.is_null()) {
    return fail(Code::kConflict, fmt::format("{} is not in attention; nothing to release", name));
  }
  auto runs = store_.runs_in_cleanup(store::CleanupState::kAttention);
  if (!runs) return tl::unexpected(runs.error());
  nlohmann::json was = health_[slot].attention;
  auto committed = commit([&]() -> Status {
    for (const Run& run : *runs) {
      if (std::find(run.gpus.begin(), run.gpus.end(), name) == run.gpus.end()) continue;
      // A run stays in attention while another of its GPUs still waits for a person, so that
      // a restart keeps that GPU out too.
      bool others_wait = false;
      for (int other : slots_of(inventory_, run)) {
        const auto& a = health_[other].attention;
        others_wait = others_wait || (other != slot && !a.is_null() && a.value("job", int64_t{0}) == run.job_id &&
                                      a.value("run", 0) == run.number);
      }
      if (others_wait) continue;
      if (auto st = store_.set_cleanup(run.id, store::CleanupState::kReleased); !st) return st;
    }
    return add_event("resource.released", std::nullopt, std::nullopt,
                     {{"gpu", name}, {"was", "attention"}, {"attention", was}});
  });
  if (!committed) return tl::unexpected(unavailable(committed.error()));
  health_[slot].attention = nullptr;
  request_pass();
  return nlohmann::json{{"gpu", name}, {"state", "released"}};
}

}  // namespace gpuq::daemon
