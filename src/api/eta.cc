// SPDX-License-Identifier: Apache-2.0
#include "api/eta.h"

#include <chrono>
#include <fmt/format.h>

#include "daemon/user_usage.h"
#include "sim/simulate.h"

namespace gpuq::api {

bool EtaCache::fresh(int64_t now_ms, int64_t seq) const {
  bool stale = computed_at_ms_ == 0 || now_ms - computed_at_ms_ > kMaxAgeMs;
  bool changed = seq != computed_seq_ && cost_ms_ < kSlowMs;
  return !stale && !changed;
}

const EtaCache::Etas& EtaCache::none(std::string note, int64_t now_ms, int64_t seq, bool until_change) {
  cached_ = Etas{};
  cached_.note = std::move(note);
  computed_at_ms_ = now_ms;
  computed_seq_ = seq;
  // Else kept for kMaxAgeMs even across changes, as a slow simulation is.
  cost_ms_ = until_change ? 0 : kSlowMs;
  return cached_;
}

const EtaCache::Etas& EtaCache::get(const std::vector<Job>& jobs, const gpu::Inventory& inventory,
                                    const daemon::Config& config, int64_t now_ms, int64_t seq) {
  if (!fresh(now_ms, seq)) {
    auto started = std::chrono::steady_clock::now();
    cached_ = compute(jobs, inventory, config, now_ms);
    cost_ms_ = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
    computed_at_ms_ = now_ms;
    computed_seq_ = seq;
  }
  return cached_;
}

EtaCache::Etas EtaCache::compute(const std::vector<Job>& jobs, const gpu::Inventory& inventory,
                                 const daemon::Config& config, int64_t now_ms) const {
  Etas etas;
  std::vector<sim::SimJob> waiting;
  std::vector<sim::SimRunning> running;
  sim::SimUsers users;  // [users]: fair share and limits, as the daemon applies them
  daemon::UserUsage usage(config.users);  // the running jobs' usage so far
  auto bound = [](const JobSpec& s) { return s.estimate_ms ? s.estimate_ms : s.timeout_ms; };
  // Each job's place in `jobs`, and which of them the simulation takes (flags by place).
  std::unordered_map<int64_t, size_t> place;
  place.reserve(jobs.size());
  for (size_t k = 0; k < jobs.size(); ++k) place.emplace(jobs[k].id, k);
  std::vector<char> taken(jobs.size(), 0);
  size_t taken_count = 0;
  auto is_taken = [&](int64_t id) {
    auto it = place.find(id);
    return it != place.end() && taken[it->second];
  };
  for (size_t k = 0; k < jobs.size(); ++k) {
    const Job& job = jobs[k];
    if (job.state != JobState::kRunning && job.state != JobState::kPending) continue;
    if (bound(job.spec) == 0) {
      etas.note = fmt::format("no ETAs: job {} has no estimate (--est) or timeout", job.id);
      return etas;
    }
    taken[k] = 1;
    ++taken_count;
  }
  // A job waiting on a file or a REQUIRES test starts when that holds, which no estimate
  // predicts: it gets no ETA, and neither does any job that waits on it.
  auto drop = [&](size_t k) {
    taken[k] = 0;
    --taken_count;
  };
  for (size_t k = 0; k < jobs.size(); ++k) {
    if (jobs[k].state != JobState::kPending || !taken[k]) continue;
    for (const auto& d : jobs[k].spec.deps) {
      if (d.kind == Dependency::Kind::kFile || d.kind == Dependency::Kind::kRequires) {
        drop(k);
        break;
      }
    }
  }
  auto unfinished = [&](int64_t id) {
    auto it = place.find(id);
    if (it == place.end()) return false;
    JobState state = jobs[it->second].state;
    return state == JobState::kRunning || state == JobState::kPending || state == JobState::kHeld ||
           state == JobState::kBlocked;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t k = 0; k < jobs.size(); ++k) {
      if (jobs[k].state != JobState::kPending || !taken[k]) continue;
      for (const auto& d : jobs[k].spec.deps) {
        if (d.job_id && unfinished(d.job_id) && !is_taken(d.job_id)) {
          drop(k);
          changed = true;
          break;
        }
      }
    }
  }
  if (taken_count > kMaxJobs) {
    etas.note = fmt::format("no ETAs: more than {} active jobs", kMaxJobs);
    return etas;
  }
  waiting.reserve(taken_count);
  for (size_t k = 0; k < jobs.size(); ++k) {
    const Job& job = jobs[k];
    if (!taken[k]) continue;
    if (job.state == JobState::kRunning) {
      if (job.runs.empty()) continue;
      const Run& run = job.runs.back();
      sim::SimRunning r;
      r.name = std::to_string(job.id);
      for (size_t slot = 0; slot < inventory.resources.size(); ++slot) {
        for (const auto& name : run.gpus) {
          if (inventory.resources[slot].name == name) r.slots.push_back(static_cast<int>(slot));
        }
      }
      // An overrun estimate still ends some time: assume it ends within a minute.
      r.remaining_ms = std::max<int64_t>(60'000, run.started_at_ms + bound(job.spec) - now_ms);
      r.lanes = job.spec.lanes;
      users.of_job[r.name] = job.spec.user;
      // What it has used so far counts towards its user's usage, as in the daemon's passes.
      usage.add_run(usage.owner_of(job.spec.user), static_cast<int>(r.slots.size()),
                    run.started_at_ms, now_ms);
      running.push_back(std::move(r));
      continue;
    }
    sim::SimJob s;
    s.name = std::to_string(job.id);
    s.gpus = job.spec.gpus;
    s.priority = job.spec.priority;
    s.duration_ms = bound(job.spec);
    s.estimate_ms = s.duration_ms;
    s.submit_ms = std::max<int64_t>(0, std::max(job.spec.not_before_ms, job.retry_at_ms) - now_ms);
    for (const auto& d : job.spec.deps) {
      if (!d.job_id || !is_taken(d.job_id)) continue;
      if (d.kind == Dependency::Kind::kAfterOk) s.after.push_back(std::to_string(d.job_id));
      if (d.kind == Dependency::Kind::kAfterAny) s.after_any.push_back(std::to_string(d.job_id));
    }
    s.lanes = job.spec.lanes;
    s.gpu_mem_mib = job.spec.gpu_mem_mib;
    s.share = job.spec.share;
    users.of_job[s.name] = job.spec.user;
    waiting.push_back(std::move(s));
  }
  if (waiting.empty()) return etas;
  sim::SimMachine machine;
  machine.gpus = static_cast<int>(inventory.resources.size());
  machine.links = inventory.links;
  for (const auto& lane : config.lanes) {
    sched::Lane l;
    l.name = lane.name;
    l.capacity = lane.capacity;
    l.excludes = lane.excludes;
    machine.lanes.push_back(std::move(l));
  }
  machine.backfill_unknown_limit_ms = config.backfill_unknown_limit_ms;
  for (size_t owner = 0; owner < usage.user_count(); ++owner) {
    const std::string& user = usage.user_of(static_cast<int>(owner));
    users.usage_gpu_ms[user] = usage.usage_gpu_ms(user, now_ms);
  }
  users.fair_share = config.users.fair_share;
  users.half_life_ms = config.users.fair_share_half_life_ms;
  users.limits = {config.users.limits.max_gpus, config.users.limits.max_running};
  for (const auto& [name, limits] : config.users.per_user) {
    users.per_user[name] = {limits.max_gpus, limits.max_running};
  }
  machine.users = std::move(users);
  auto result = sim::simulate(waiting, machine, daemon::policy_of(config), running);
  if (!result) {
    etas.note = "no ETAs: " + result.error().message;
    return etas;
  }
  etas.start_ms.reserve(result->jobs.size());
  etas.runs.reserve(result->jobs.size());
  for (const auto& row : result->jobs) {
    int64_t id = std::stoll(row.name);
    etas.start_ms[id] = now_ms + row.start_ms;
    auto at = place.find(id);
    const Job* job = at == place.end() ? nullptr : &jobs[at->second];
    if (job == nullptr || job->state != JobState::kPending) continue;
    etas.runs[id] = {job->spec.name, job->spec.gpus, now_ms + row.start_ms,
                     now_ms + row.start_ms + bound(job->spec)};
  }
  return etas;
}

}  // namespace gpuq::api
