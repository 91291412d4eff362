// SPDX-License-Identifier: Apache-2.0
// The simulator's users (SimMachine::users): fair share and per-user limits on the virtual
// clock, as the daemon applies them (daemon/user_usage.h): usage charged with the same decay
// (sched/fair_share.h) as runs end, running jobs counted as they accrue.
#include <algorithm>

#include "sched/fair_share.h"
#include "sim/engine.h"

namespace gpuq::sim::detail {

int Simulation::owner_of(const std::string& job) {
  auto named = machine_.users.of_job.find(job);
  if (named == machine_.users.of_job.end() || named->second.empty()) return -1;
  const std::string& user = named->second;
  auto [it, added] = owner_index_.try_emplace(user, static_cast<int>(owners_.size()));
  if (added) owners_.push_back(user);
  return it->second;
}

void Simulation::load_owners() {
  const SimUsers& users = machine_.users;
  snap_.fair_share = users.fair_share;
  snap_.owners.assign(owners_.size(), sched::Owner{});
  owner_usage_.assign(owners_.size(), 0);
  owner_usage_at_.assign(owners_.size(), 0);
  bool limited = false;
  for (size_t i = 0; i < owners_.size(); ++i) {
    if (auto usage = users.usage_gpu_ms.find(owners_[i]); usage != users.usage_gpu_ms.end()) {
      owner_usage_[i] = usage->second;
    }
    SimUserLimits limits = users.limits;
    if (auto own = users.per_user.find(owners_[i]); own != users.per_user.end()) {
      if (own->second.max_gpus) limits.max_gpus = own->second.max_gpus;
      if (own->second.max_running) limits.max_running = own->second.max_running;
    }
    snap_.owners[i].max_gpus = limits.max_gpus.value_or(-1);
    snap_.owners[i].max_running = limits.max_running.value_or(-1);
    limited = limited || limits.max_gpus || limits.max_running;
  }
  users_matter_ = limited || (users.fair_share && owners_.size() > 1);
  // The window's proofs (window.h) assume plain order and fates: pass the whole queue.
  if (users_matter_) options_.full_queue = true;
}

void Simulation::charge_owner(const Entity& e, int64_t t) {
  if (e.owner < 0 || e.gpus <= 0) return;
  const size_t o = static_cast<size_t>(e.owner);
  const int64_t half_life = machine_.users.half_life_ms;
  const int64_t at = std::max(owner_usage_at_[o], t);
  owner_usage_[o] = sched::decayed(owner_usage_[o], at - owner_usage_at_[o], half_life) +
                    sched::decayed_gpu_ms(e.gpus, e.start_ms, t, at, half_life);
  owner_usage_at_[o] = at;
}

void Simulation::update_owners(int64_t t) {
  if (!users_matter_) return;
  const int64_t half_life = machine_.users.half_life_ms;
  for (size_t o = 0; o < owners_.size(); ++o) {
    snap_.owners[o].usage_gpu_ms =
        sched::decayed(owner_usage_[o], t - owner_usage_at_[o], half_life);
  }
  for (const sched::RunningJob& r : snap_.running) {
    const Entity& e = entities_[static_cast<size_t>(r.id - 1)];
    if (e.owner < 0) continue;
    snap_.owners[static_cast<size_t>(e.owner)].usage_gpu_ms +=
        sched::decayed_gpu_ms(e.gpus, e.start_ms, t, t, half_life);
  }
}

}  // namespace gpuq::sim::detail
