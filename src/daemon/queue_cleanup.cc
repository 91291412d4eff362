// The Queue's side of cleanup after every run: a finished run's GPUs and lanes stay held until
// its cleanup is confirmed (World::clean_up: the run's cgroup is empty, or the sweep for its
// marker has seen two empty scans); one that cannot be confirmed puts its GPUs in attention
// until a person releases them. A cgroup's accounting (CPU time, peak memory) is recorded on
// the run with the confirmation.
#include <fmt/format.h>

#include "base/time.h"
#include "daemon/queue.h"

namespace gpuq::daemon {
namespace {

nlohmann::json strays_json(const std::vector<runner::StrayProcess>& strays) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : strays) {
    out.push_back({{"pid", p.pid}, {"command", p.cmdline}, {"user", p.user}});
  }
  return out;
}

}  // namespace

void Queue::begin_cleanup(int64_t run_row, Cleaning cleaning, uint64_t started_ticks) {
  for (int slot : cleaning.slots) health_[slot].cleaning = true;
  runner::CleanupTarget target;
  target.key = run_row;
  target.run_id = cleaning.run_id;
  target.started_ticks = started_ticks;
  cleaning_[run_row] = std::move(cleaning);
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

void Queue::on_cleanup(const runner::CleanupOutcome& outcome) {
  auto it = cleaning_.find(outcome.key);
  if (it == cleaning_.end() || stopping_) return;
  it->second.outcome = outcome;
  record_cleanup(outcome.key);
}

void Queue::record_cleanup(int64_t run_row) {
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
    commit_later([this, run_row] { return store_.set_cleanup(run_row, store::CleanupState::kDone); });
  } else if (auto committed = commit([&]() -> Status {
    auto st = store_.set_cleanup(run_row, outcome.confirmed ? store::CleanupState::kDone
                                                             : store::CleanupState::kAttention);
    if (!st) return st;
    if (outcome.usage.cpu_usec || outcome.usage.peak_bytes) {
      st = store_.set_run_usage(run_row, outcome.usage.cpu_usec, outcome.usage.peak_bytes);
      if (!st) return st;
    }
    if (!outcome.killed.empty() || !outcome.confirmed) {
      st = add_event("job.cleanup", c.job_id, c.run_number,
                     {{"confirmed", outcome.confirmed},
                      {"by", outcome.by_cgroup ? "cgroup" : "marker"},
                      {"killed", strays_json(outcome.killed)},
                      {"killed_total", outcome.killed_total},
                      {"remaining", strays_json(outcome.remaining)},
                      {"gpus", gpus},
                      {"scans", outcome.scans}});
      if (!st) return st;
    }
    if (outcome.confirmed) return ok();
    for (const auto& gpu : gpus) {
      st = add_event("resource.attention", c.job_id, c.run_number,
                     {{"gpu", gpu},
                      {"processes", strays_json(outcome.remaining)},
                      {"why", fmt::format("cleanup after run {} of job {} could not be confirmed: {} "
                                          "still there at the cleanup limit",
                                          c.run_number, c.job_id,
                                          outcome.by_cgroup ? "processes in its cgroup were"
                                                            : "processes carrying its marker were")},
                      {"fix", fmt::format("check the processes, then: gpuq release --attention {}", gpu)}});
      if (!st) return st;
    }
    return ok();
  }); !committed) {
    // Its GPUs stay held until the outcome and its events are on record.
    retry_later(fmt::format("cleanup:{}", run_row), [this, run_row] { record_cleanup(run_row); });
    return;
  }
  if (outcome.usage.cpu_usec) {
    metrics_.run_accounted(static_cast<double>(*outcome.usage.cpu_usec) / 1e6, outcome.usage.peak_bytes);
  }
  Cleaning done = std::move(it->second);
  cleaning_.erase(it);
  free_slots(done.job_id, done.slots, done.lanes);
  for (int slot : done.slots) {
    health_[slot].cleaning = std::any_of(cleaning_.begin(), cleaning_.end(), [slot](const auto& entry) {
      return std::find(entry.second.slots.begin(), entry.second.slots.end(), slot) != entry.second.slots.end();
    });
    if (!done.outcome->confirmed) {
      health_[slot].attention = {{"since", format_rfc3339(now)},
                                 {"job", done.job_id},
                                 {"run", done.run_number},
                                 {"processes", strays_json(done.outcome->remaining)},
                                 {"why", "cleanup could not be confirmed"}};
    }
  }
  request_pass();
}

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
      for (int other : slots_of(run)) {
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

Status Queue::recover_cleanups() {
  // Runs whose cleanup was under way when the daemon stopped: sweep again before their GPUs
  // serve. Runs in attention keep their GPUs out until a person releases them.
  auto pending = store_.runs_in_cleanup(store::CleanupState::kPending);
  if (!pending) return tl::unexpected(pending.error());
  for (const Run& run : *pending) {
    if (cleaning_.count(run.id)) continue;
    std::vector<int> slots = slots_of(run);
    std::vector<int> lanes;
    if (auto job = load_job(run.job_id, false)) lanes = lanes_of(job->spec);
    hold_slots(run.job_id, slots, lanes);
    begin_cleanup(run.id, {run.job_id, run.number, run.run_id, slots, lanes, 0, std::nullopt},
                  run.shim_start_ticks);
  }
  auto attention = store_.runs_in_cleanup(store::CleanupState::kAttention);
  if (!attention) return tl::unexpected(attention.error());
  for (const Run& run : *attention) {
    for (int slot : slots_of(run)) {
      health_[slot].attention = {{"since", format_rfc3339(run.ended_at_ms)},
                                 {"job", run.job_id},
                                 {"run", run.number},
                                 {"processes", nlohmann::json::array()},
                                 {"why", "cleanup could not be confirmed (see the resource.attention "
                                         "event); kept across the daemon's restart"}};
    }
  }
  return ok();
}

}  // namespace gpuq::daemon
