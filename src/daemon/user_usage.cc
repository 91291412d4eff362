// SPDX-License-Identifier: Apache-2.0
#include "daemon/user_usage.h"

#include <algorithm>

#include "sched/fair_share.h"

namespace gpuq::daemon {

UserUsage::UserUsage(config::UsersConfig settings) : settings_(std::move(settings)) {}

void UserUsage::configure(config::UsersConfig settings) { settings_ = std::move(settings); }

int UserUsage::owner_of(const std::string& user) {
  if (user.empty()) return -1;
  auto [it, added] = index_.try_emplace(user, static_cast<int>(users_.size()));
  if (added) users_.push_back({user});
  return it->second;
}

const std::string& UserUsage::user_of(int owner) const {
  static const std::string kNobody;
  return owner < 0 || static_cast<size_t>(owner) >= users_.size() ? kNobody : users_[owner].name;
}

Status UserUsage::load(store::Store& store, int64_t now_ms) {
  const int64_t half_life = std::max<int64_t>(settings_.fair_share_half_life_ms, 1);
  const int64_t from = half_life > now_ms / 10 ? 0 : now_ms - 10 * half_life;
  auto runs = store.usage_runs(from, now_ms + 1);
  if (!runs) return tl::unexpected(runs.error());
  for (const store::Store::UsageRun& run : *runs) {
    if (run.ended_at_ms == 0) continue;  // running: the passes count it
    add_run(owner_of(run.user), static_cast<int>(run.gpus.size()), run.started_at_ms,
            run.ended_at_ms);
  }
  return ok();
}

void UserUsage::add_run(int owner, int gpus, int64_t started_ms, int64_t ended_ms) {
  if (owner < 0 || static_cast<size_t>(owner) >= users_.size() || gpus <= 0) return;
  PerUser& user = users_[owner];
  const int64_t half_life = settings_.fair_share_half_life_ms;
  // Usage is kept as of the latest time anything was added.
  const int64_t at = std::max(user.usage_at_ms, ended_ms);
  user.usage = sched::decayed(user.usage, at - user.usage_at_ms, half_life) +
               sched::decayed_gpu_ms(gpus, started_ms, ended_ms, at, half_life);
  user.usage_at_ms = at;
}

void UserUsage::observe_running(const std::vector<sched::RunningJob>& running, int64_t now_ms) {
  std::unordered_map<int64_t, Seen> seen;
  for (const sched::RunningJob& run : running) {
    if (run.owner < 0 || run.started_at_ms <= 0) continue;
    seen[run.id] = {run.owner, static_cast<int>(run.slots.size()), run.started_at_ms};
  }
  for (const auto& [job, before] : running_) {
    auto now = seen.find(job);
    if (now == seen.end() || now->second.started_ms != before.started_ms) {
      add_run(before.owner, before.gpus, before.started_ms, now_ms);
    }
  }
  running_ = std::move(seen);
}

void UserUsage::note_started(int64_t job, int owner, int gpus, int64_t started_ms) {
  if (owner < 0 || started_ms <= 0) return;
  running_[job] = {owner, gpus, started_ms};
}

double UserUsage::usage_at(const PerUser& user, int64_t now_ms) const {
  return sched::decayed(user.usage, now_ms - user.usage_at_ms, settings_.fair_share_half_life_ms);
}

std::vector<sched::Owner> UserUsage::owners(int64_t now_ms) const {
  std::vector<sched::Owner> out(users_.size());
  for (size_t i = 0; i < users_.size(); ++i) {
    out[i].usage_gpu_ms = usage_at(users_[i], now_ms);
    const config::UserLimits limits = limits_of(users_[i].name);
    out[i].max_gpus = limits.max_gpus.value_or(-1);
    out[i].max_running = limits.max_running.value_or(-1);
  }
  for (const auto& [job, run] : running_) {
    out[run.owner].usage_gpu_ms += sched::decayed_gpu_ms(run.gpus, run.started_ms, now_ms, now_ms,
                                                         settings_.fair_share_half_life_ms);
  }
  return out;
}

double UserUsage::usage_gpu_ms(const std::string& user, int64_t now_ms) const {
  auto it = index_.find(user);
  if (it == index_.end()) return 0;
  return owners(now_ms)[it->second].usage_gpu_ms;
}

void UserUsage::count_unfinished(int owner, int delta) {
  if (owner >= 0 && static_cast<size_t>(owner) < users_.size()) users_[owner].unfinished += delta;
}

int64_t UserUsage::unfinished(const std::string& user) const {
  auto it = index_.find(user);
  return it == index_.end() ? 0 : users_[it->second].unfinished;
}

config::UserLimits UserUsage::limits_of(const std::string& user) const {
  config::UserLimits limits = settings_.limits;
  if (auto own = settings_.per_user.find(user); own != settings_.per_user.end()) {
    if (own->second.max_gpus) limits.max_gpus = own->second.max_gpus;
    if (own->second.max_running) limits.max_running = own->second.max_running;
    if (own->second.max_queued) limits.max_queued = own->second.max_queued;
  }
  return limits;
}

}  // namespace gpuq::daemon
