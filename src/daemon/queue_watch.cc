// SPDX-License-Identifier: Apache-2.0
// The watchers and the heartbeat: the actor gathers the facts each watcher needs (conditions,
// logs, GPU use, free GPUs and waiting jobs), the watchers (watchers.h) decide what holds, and
// the episode book (episodes.h) turns that into events, committed with the episodes' rows so a
// restart neither repeats nor loses one. Looks happen every [watch] interval, and sooner when
// an episode's start or repeat falls due; a log's growth and a GPU's use cannot wake us.
#include <algorithm>

#include "base/time.h"
#include "daemon/queue.h"
#include "daemon/watchers.h"
#include "runner/run_files.h"

namespace gpuq::daemon {
namespace {

constexpr size_t kHeadJobs = 5;  // how many waiting jobs queue.idle_with_work names

}  // namespace

Status Queue::start_watching() {
  auto rows = store_.episodes();
  if (!rows) return tl::unexpected(rows.error());
  std::vector<OpenEpisode> open;
  for (const auto& row : *rows) {
    auto data = nlohmann::json::parse(row.data, nullptr, false);
    open.push_back(episode_from(row.key, row.kind, row.since_ms, row.reported_ms, data));
  }
  episodes_.restore(std::move(open));
  beat();
  // The first look waits an interval, so that conditions are checked and the GPUs probed
  // before anything is judged (an open episode is never ended for want of a fact).
  arm_look(world_.now_ms() + config_.watch.interval_ms);
  return ok();
}

void Queue::arm_look(int64_t at_ms) {
  if (stopping_) return;
  int64_t now = world_.now_ms();
  if (look_at_ms_ != 0 && look_at_ms_ <= at_ms && look_at_ms_ > now) return;
  look_at_ms_ = at_ms;
  look_timer_->arm(at_ms, [this] {
    look_at_ms_ = 0;
    look();
  });
}

void Queue::beat() {
  if (stopping_) return;
  int64_t now = world_.now_ms();
  (void)commit([&] { return store_.set_meta("heartbeat", std::to_string(now)); });
  heartbeat_timer_->arm(now + config_.watch.heartbeat_ms, [this] { beat(); });
}

void Queue::look() {
  if (stopping_) return;
  auto look_started = std::chrono::steady_clock::now();
  int64_t now = world_.now_ms();
  std::vector<Sighting> sightings;
  gather_job_sightings(now, sightings);
  gather_queue_sightings(now, sightings);
  EpisodeBook before = episodes_;
  LookResult result = episodes_.look(sightings, now);
  if (!result.events.empty() || !result.saved.empty() || !result.forgotten.empty()) {
    auto committed = commit([&]() -> Status {
      for (auto& event : result.events) {
        if (auto st = add_event(event.kind, event.job, std::nullopt, std::move(event.data)); !st) return st;
      }
      for (const auto& episode : result.saved) {
        store::Store::Episode row{episode.key, episode.kind, episode.since_ms, episode.reported_ms,
                                  episode_data(episode).dump(-1, ' ', false,
                                                             nlohmann::json::error_handler_t::replace)};
        if (auto st = store_.put_episode(row); !st) return st;
      }
      for (const auto& key : result.forgotten) {
        if (auto st = store_.delete_episode(key); !st) return st;
      }
      return ok();
    });
    // Not recorded: the book forgets this look, so the next one tells the same again.
    if (!committed) episodes_ = std::move(before);
  }
  last_look_us_.store(std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::steady_clock::now() - look_started)
                          .count(),
                      std::memory_order_relaxed);
  // Looks come every interval, and sooner when a start or repeat falls due, but never back to
  // back: due times spread over many jobs must not keep the actor busy with O(jobs) looks.
  int64_t next = now + config_.watch.interval_ms;
  if (int64_t due = episodes_.next_due_ms(); due > now) next = std::min(next, due);
  arm_look(std::max(next, now + std::max<int64_t>(config_.watch.interval_ms / 10, 10)));
}

void Queue::gather_job_sightings(int64_t now, std::vector<Sighting>& out) {
  const WatchConfig& watch = config_.watch;
  auto lookup = [this](int64_t id) { return state_of(id); };
  // A pending job with neither dependencies nor conditions never waits in this sense.
  for (int64_t id : ready_index_.with_deps_or_conditions()) {
    auto active = active_.find(id);
    if (active == active_.end()) continue;
    const ActiveJob& job = active->second;
    if (job.state != JobState::kPending) continue;
    JobFacts facts;
    facts.id = id;
    const RareJobFields& rare = job.rare.get();
    facts.requires_warn_ms = rare.requires_warn_ms >= 0 ? rare.requires_warn_ms : watch.requires_warn_ms;
    if (facts.requires_warn_ms <= 0) continue;
    // In the pass's order: conditions are checked only once the job dependencies are met.
    // A dependency on a held job waits for a person; one on a pending or running job is
    // ordinary queueing, and one that can never be met blocks the job (job.blocked).
    auto verdict = rare.deps.empty() ? DependencyVerdict{} : evaluate_job_dependencies(job, lookup);
    if (verdict.kind == DependencyVerdict::Kind::kWaiting) {
      if (verdict.job_state != JobState::kHeld) continue;
      facts.waiting = true;
      facts.waiting_why = verdict.text();
    } else if (job.has_conditions && job.conditions != ConditionState::kTrue) {
      if (rare.conditions_false_since_ms != 0) {
        facts.waiting = true;
        facts.waiting_since_ms = rare.conditions_false_since_ms;
        facts.waiting_why =
            rare.conditions_false_text.empty() ? "its conditions" : rare.conditions_false_text;
      } else {
        facts.waiting_unknown = true;  // not checked yet, or the first check is running
      }
    }
    for (auto& s : watch_job(facts, watch, now)) out.push_back(std::move(s));
  }
  for (auto it = gpu_busy_ms_.begin(); it != gpu_busy_ms_.end();) {
    it = runs_->find(it->first) ? std::next(it) : gpu_busy_ms_.erase(it);
  }
  for (const auto& [id, live] : runs_->live()) {
    if (live.settling || live.ended) continue;
    auto active = active_.find(id);
    if (active == active_.end()) continue;
    const ActiveJob& job = active->second;
    JobFacts facts;
    facts.id = id;
    facts.running = true;
    facts.started_ms = live.run.started_at_ms;
    facts.log_changed_ms = world_.modified_ms(runner::log_path(live.run.run_dir));
    facts.quiet_ms = job.rare->quiet_ms >= 0 ? job.rare->quiet_ms : watch.quiet_ms;
    facts.estimate_ms = job.estimate_ms;
    facts.warn_after_ms = job.rare->warn_after_ms;
    facts.gpus = static_cast<int>(live.slots.size());
    for (int slot : live.slots) {
      int utilization = health_[slot].utilization;
      if (utilization < 0) {
        facts.gpu_utilization = -1;
        break;
      }
      facts.gpu_utilization = std::max(facts.gpu_utilization, utilization);
    }
    // A run first seen by this daemon counts as busy from now (what it did before is not
    // known), unless an episode restored from the store says it has been idle since then.
    auto [busy, first] = gpu_busy_ms_.try_emplace(id, now);
    if (first) {
      auto open = episodes_.open().find(job_key("job.gpu_idle", id));
      if (open != episodes_.open().end()) busy->second = open->second.since_ms;
    }
    if (facts.gpu_utilization > watch.gpu_idle_utilization) busy->second = now;
    facts.gpu_busy_ms = busy->second;
    for (auto& s : watch_job(facts, watch, now)) out.push_back(std::move(s));
  }
}

void Queue::gather_queue_sightings(int64_t now, std::vector<Sighting>& out) {
  QueueFacts facts;
  facts.draining = draining_;
  facts.empty = active_.empty();
  for (size_t slot = 0; slot < health_.size(); ++slot) {
    const GpuHealth& health = health_[slot];
    if (!health.attention.is_null()) {
      auto since = parse_rfc3339(health.attention.value("since", ""));
      facts.attention.emplace_back(inventory_.resources[slot].name, since ? *since : now);
      continue;
    }
    if (holders_[slot].empty() && !health.cleaning && !foreign_.foreign(static_cast<int>(slot))) {
      ++facts.free_gpus;
    }
  }
  // Only work that could use a free GPU now counts: jobs the last pass found ready (their
  // dependencies, conditions, retry delays and not-before met) that need GPUs and did not
  // start. Jobs without GPUs (a lane's queue) leave a GPU idle for good reasons. The pass
  // lists them first in line first.
  // Waiting work matters only with a GPU free and the queue not drained (watch_queue): counting
  // it is a walk of every waiting job, not worth a look that cannot use it.
  bool could_idle = facts.free_gpus > 0 && !facts.draining && config_.watch.idle_with_work_ms > 0;
  auto published = waits();
  for (const auto& wait : published->waits) {
    if (!could_idle) break;
    auto job = active_.find(wait.job_id);
    if (job == active_.end() || job->second.state != JobState::kPending || job->second.gpus == 0) continue;
    if (facts.heads.size() < kHeadJobs) {
      facts.heads.emplace_back(wait.job_id, wait.reason.text(published->snapshot));
    }
    ++facts.waiting_jobs;
  }
  for (auto& s : watch_queue(facts, config_.watch)) out.push_back(std::move(s));
}

}  // namespace gpuq::daemon
