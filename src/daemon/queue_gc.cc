// SPDX-License-Identifier: Apache-2.0
// The Queue's retention: finished jobs older than [retention] keep go, with their runs, events
// and directories, except a job an unfinished job depends on (its state answers that
// dependency) and a job whose events an event hook has not delivered yet. One batch per
// transaction and per turn of the actor, so a first prune of a long history never holds the
// queue; the directories are removed (or, for a dry run, measured) off the actor's thread.
#include <fmt/format.h>

#include "base/duration.h"
#include "base/time.h"
#include "daemon/queue.h"

namespace gpuq::daemon {
namespace {

constexpr size_t kGcBatch = 1000;           // jobs per transaction
constexpr size_t kReportedIds = 100;        // job ids a report lists
constexpr int64_t kGcEveryMs = 3'600'000;   // the daemon's own prunes
constexpr int64_t kFirstGcAfterMs = 60'000;  // after a start: once recovery has settled

}  // namespace

struct Queue::GcRun {
  GcReport report;
  std::unordered_set<int64_t> keep;
  int64_t floor = INT64_MAX;
  bool events_pruned = false;
  std::vector<std::string> dirs;
  std::vector<std::function<void(Result<GcReport>)>> waiters;
};

nlohmann::json gc_report_to_json(const GcReport& r) {
  return {{"dry_run", r.dry_run},
          {"keep", r.keep_ms > 0 ? format_duration_exact(Millis(r.keep_ms)) : "forever"},
          {"cutoff", r.keep_ms > 0 ? nlohmann::json(format_rfc3339(r.cutoff_ms)) : nlohmann::json(nullptr)},
          {"jobs", r.jobs},
          {"job_ids", r.job_ids},
          {"runs", r.runs},
          {"events", r.events},
          {"run_dirs", r.run_dirs},
          {"bytes", r.bytes},
          {"kept_for_dependents", r.kept_for_dependents},
          {"waiting_for_hooks", r.waiting_for_hooks}};
}

void Queue::gc(bool dry_run, std::function<void(Result<GcReport>)> done) {
  if (gc_running_) {
    if (gc_running_->report.dry_run != dry_run) {
      done(fail(Code::kConflict, "a prune is under way; ask again once it has finished"));
      return;
    }
    gc_running_->waiters.push_back(std::move(done));
    return;
  }
  auto run = std::make_shared<GcRun>();
  run->report.dry_run = dry_run;
  run->report.keep_ms = config_.retention_keep_ms;
  run->waiters.push_back(std::move(done));
  if (config_.retention_keep_ms <= 0) {
    gc_running_ = run;
    return gc_finish(run, run->report);  // keep = "forever"
  }
  run->report.cutoff_ms = world_.now_ms() - config_.retention_keep_ms;
  // The state of a job an unfinished job waits for is what answers that dependency.
  for (const auto& [id, job] : active_) {
    for (const auto& dep : job.rare->deps) {
      if (dep.job_id != 0) run->keep.insert(dep.job_id);
    }
  }
  if (event_floor_) run->floor = event_floor_();
  gc_running_ = run;
  gc_step(run);
}

void Queue::gc_step(const std::shared_ptr<GcRun>& run) {
  if (stopping_) return gc_finish(run, fail(Code::kUnavailable, "the daemon is stopping"));
  GcReport& report = run->report;
  // A dry run deletes nothing, so it looks at everything at once.
  size_t limit = report.dry_run ? SIZE_MAX : kGcBatch;
  auto selection = store_.select_prunable(report.cutoff_ms, run->keep, limit);
  if (!selection) return gc_finish(run, tl::unexpected(selection.error()));
  report.kept_for_dependents = selection->kept_for_dependents;
  std::vector<int64_t>& ids = selection->job_ids;
  if (!ids.empty()) {
    auto newest = store_.last_event_seq_of(ids);
    if (!newest) return gc_finish(run, tl::unexpected(newest.error()));
    if (*newest > run->floor) {
      // A hook has not delivered these jobs' events yet: they wait for it (and for the next
      // prune), rather than vanish from the hook's stream.
      report.waiting_for_hooks = true;
      ids.clear();
    }
  }
  int64_t events = 0;
  if (!report.dry_run && (!ids.empty() || !run->events_pruned)) {
    auto committed = commit([&]() -> Status {
      if (!ids.empty()) {
        if (auto st = store_.prune_jobs(ids); !st) return st;
      }
      if (!run->events_pruned) {
        auto pruned = store_.prune_events(report.cutoff_ms, run->floor);
        if (!pruned) return tl::unexpected(pruned.error());
        events = *pruned;
      }
      return ok();
    });
    if (!committed) return gc_finish(run, tl::unexpected(unavailable(committed.error())));
    run->events_pruned = true;
    for (int64_t id : ids) {
      finished_.erase(id);
      ready_index_.mark(id);  // a job depending on it would see it gone
    }
  }
  report.jobs += static_cast<int64_t>(ids.size());
  report.runs += selection->runs;
  report.run_dirs += selection->runs;
  report.events += selection->events + events;
  for (int64_t id : ids) {
    if (report.job_ids.size() < kReportedIds) report.job_ids.push_back(id);
    run->dirs.push_back(options_.layout.job_dir(id));
  }
  if (!report.dry_run && ids.size() == kGcBatch) {
    world_.post([this, run] { gc_step(run); });  // the next batch, on a later turn
    return;
  }
  auto dirs = std::move(run->dirs);
  world_.measure_trees(std::move(dirs), !report.dry_run, [this, run](int64_t bytes) {
    run->report.bytes = bytes;
    gc_finish(run, run->report);
  });
}

void Queue::gc_finish(const std::shared_ptr<GcRun>& run, Result<GcReport> result) {
  if (gc_running_ == run) gc_running_.reset();
  if (result && !result->dry_run && result->jobs + result->events > 0) {
    (void)commit([&] {
      auto data = gc_report_to_json(*result);
      data.erase("dry_run");
      data.erase("job_ids");
      return add_event("daemon.pruned", std::nullopt, std::nullopt, std::move(data));
    });
  }
  for (auto& waiter : run->waiters) waiter(result);
}

void Queue::start_pruning() {
  if (options_.scheduled_prunes) arm_gc(world_.now_ms() + kFirstGcAfterMs);
}

void Queue::arm_gc(int64_t at_ms) {
  if (config_.retention_keep_ms <= 0 || stopping_) return;
  gc_timer_->arm(at_ms, [this] {
    gc(false, [this](const Result<GcReport>& result) {
      if (!result) {
        std::fprintf(stderr, "gpuq daemon: pruning finished jobs failed: %s; trying again in an hour\n",
                     result.error().message.c_str());
      }
      arm_gc(world_.now_ms() + kGcEveryMs);
    });
  });
}

}  // namespace gpuq::daemon
