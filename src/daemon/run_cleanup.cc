// SPDX-License-Identifier: Apache-2.0
// Cleanup after every run: a finished run's GPUs and lanes stay held until its cleanup is
// confirmed (World::clean_up: the run's cgroup is empty, or the sweep for its marker has seen two
// empty scans); one that cannot be confirmed puts its GPUs in attention until a person releases
// them (Queue::release_attention). A cgroup's accounting (CPU time, peak memory) is recorded on
// the run with the confirmation.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>

#include "base/time.h"
#include "daemon/run_lifecycle.h"

namespace gpuq::daemon {
namespace {

nlohmann::json strays_json(const std::vector<runner::StrayProcess>& strays) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : strays) {
    out.push_back({{"pid", p.pid}, {"command", p.cmdline}, {"user", p.user}});
  }
  return out;
}

// Why a cleanup is not confirmed, for people: the processes, or the containers, left.
std::string unconfirmed_why(const Cleaning& c, const runner::CleanupOutcome& outcome) {
  if (!outcome.containers_left.empty()) {
    return fmt::format("cleanup after run {} of job {} could not be confirmed: container {} still "
                       "there at the cleanup limit{}{}",
                       c.run_number, c.job_id, fmt::join(outcome.containers_left, ", "),
                       outcome.containers_message.empty() ? "" : ": ", outcome.containers_message);
  }
  return fmt::format("cleanup after run {} of job {} could not be confirmed: {} still there at the "
                     "cleanup limit",
                     c.run_number, c.job_id,
                     outcome.by_cgroup ? "processes in its cgroup were" : "processes carrying its marker were");
}

}  // namespace

std::string RunLifecycle::cgroup_user_of(const std::string& login) {
  auto who = world_.submitter_identity(login);
  return who && *who ? login : "";
}

void RunLifecycle::begin_cleanup(int64_t run_row, Cleaning cleaning, uint64_t started_ticks) {
  for (int slot : cleaning.slots) host_.set_cleaning(slot, true);
  runner::CleanupTarget target;
  target.key = run_row;
  target.run_id = cleaning.run_id;
  target.started_ticks = started_ticks;
  target.cgroup_user = cleaning.cgroup_user;
  // A container job's run whose runtime cannot be found now: its containers cannot be looked
  // for, so its cleanup is not confirmed, whatever its processes say.
  std::string no_runtime;
  if (cleaning.containers) {
    auto runtime = world_.container_runtime(config_.containers);
    if (runtime) {
      target.containers = std::move(*runtime);
    } else {
      no_runtime = runtime.error().message;
    }
  }
  cleaning_[run_row] = std::move(cleaning);
  if (!no_runtime.empty()) {
    std::string label = runner::container_label(target.run_id);
    world_.clean_up(std::move(target), [this, no_runtime, label](runner::CleanupOutcome outcome) {
      outcome.confirmed = false;
      outcome.containers_left = {"containers labelled " + label};
      outcome.containers_message = "no container runtime to look for them: " + no_runtime;
      on_cleanup(outcome);
    });
    return;
  }
  if (target.run_id.empty()) {
    // A run from before markers existed: nothing to sweep for.
    runner::CleanupOutcome outcome;
    outcome.key = run_row;
    outcome.confirmed = true;
    world_.post([this, outcome] { on_cleanup(outcome); });
    return;
  }
  world_.clean_up(std::move(target), [this](runner::CleanupOutcome outcome) { on_cleanup(outcome); });
}

void RunLifecycle::on_cleanup(const runner::CleanupOutcome& outcome) {
  auto it = cleaning_.find(outcome.key);
  if (it == cleaning_.end() || stopping_) return;
  it->second.outcome = outcome;
  record_cleanup(outcome.key);
}

void RunLifecycle::record_cleanup(int64_t run_row) {
  auto it = cleaning_.find(run_row);
  if (it == cleaning_.end() || !it->second.outcome) return;
  const Cleaning& c = it->second;
  const runner::CleanupOutcome& outcome = *c.outcome;
  int64_t now = world_.now_ms();
  std::vector<std::string> gpus;
  for (int slot : c.slots) gpus.push_back(inventory_.resources[slot].name);
  if (outcome.confirmed && outcome.killed.empty()) {
    // The usual end: nothing to tell anyone, so no transaction of its own. The confirmation
    // rides in the next commit (most often the start that takes the freed GPU); lost in a
    // crash, it costs a sweep at the restart (recover_cleanups), never a wrong release.
    // What the run's cgroup accounted for goes with it (lost with it in a crash).
    host_.commit_later([this, run_row, usage = outcome.usage]() -> Status {
      if (auto st = store_.set_cleanup(run_row, store::CleanupState::kDone); !st) return st;
      if (!usage.cpu_usec && !usage.peak_bytes) return ok();
      return store_.set_run_usage(run_row, usage.cpu_usec, usage.peak_bytes);
    });
  } else if (auto committed = host_.commit([&]() -> Status {
    auto st = store_.set_cleanup(run_row, outcome.confirmed ? store::CleanupState::kDone
                                                             : store::CleanupState::kAttention);
    if (!st) return st;
    if (outcome.usage.cpu_usec || outcome.usage.peak_bytes) {
      st = store_.set_run_usage(run_row, outcome.usage.cpu_usec, outcome.usage.peak_bytes);
      if (!st) return st;
    }
    if (!outcome.killed.empty() || !outcome.confirmed || !outcome.containers_removed.empty()) {
      st = host_.add_event("job.cleanup", c.job_id, c.run_number,
                           {{"confirmed", outcome.confirmed},
                            {"by", outcome.by_cgroup ? "cgroup" : "marker"},
                            {"killed", strays_json(outcome.killed)},
                            {"killed_total", outcome.killed_total},
                            {"remaining", strays_json(outcome.remaining)},
                            {"gpus", gpus},
                            {"scans", outcome.scans},
                            {"containers_removed", outcome.containers_removed},
                            {"containers_left", outcome.containers_left}});
      if (!st) return st;
    }
    if (outcome.confirmed) return ok();
    for (const auto& gpu : gpus) {
      st = host_.add_event(
          "resource.attention", c.job_id, c.run_number,
          {{"gpu", gpu},
           {"processes", strays_json(outcome.remaining)},
           {"why", unconfirmed_why(c, outcome)},
           {"containers", outcome.containers_left},
           {"fix", outcome.containers_left.empty()
                       ? fmt::format("check the processes, then: gpuq release --attention {}", gpu)
                       : fmt::format("remove the containers ({} rm -f NAME), then: gpuq release "
                                     "--attention {}", config_.containers.runtime.empty() ? "docker|podman"
                                                                                          : config_.containers.runtime, gpu)}});
      if (!st) return st;
    }
    return ok();
  }); !committed) {
    // Its GPUs stay held until the outcome and its events are on record.
    host_.retry_later(fmt::format("cleanup:{}", run_row), [this, run_row] { record_cleanup(run_row); });
    return;
  }
  if (outcome.usage.cpu_usec) {
    host_.metrics().run_accounted(static_cast<double>(*outcome.usage.cpu_usec) / 1e6, outcome.usage.peak_bytes);
  }
  Cleaning done = std::move(it->second);
  cleaning_.erase(it);
  host_.free_slots(done.job_id, done.slots, done.lanes);
  for (int slot : done.slots) {
    host_.set_cleaning(slot, std::any_of(cleaning_.begin(), cleaning_.end(), [slot](const auto& entry) {
      return std::find(entry.second.slots.begin(), entry.second.slots.end(), slot) != entry.second.slots.end();
    }));
    if (!done.outcome->confirmed) {
      host_.set_attention(slot, {{"since", format_rfc3339(now)},
                                 {"job", done.job_id},
                                 {"run", done.run_number},
                                 {"processes", strays_json(done.outcome->remaining)},
                                 {"containers", done.outcome->containers_left},
                                 {"why", unconfirmed_why(done, *done.outcome)}});
    }
  }
  host_.request_pass();
}

}  // namespace gpuq::daemon
