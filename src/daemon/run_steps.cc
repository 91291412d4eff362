// SPDX-License-Identifier: Apache-2.0
// The steps of a running job (docs/jobs.md, "Steps"): the step a run begins at, and each step's
// start and end put on record with its event as the shim reports it in steps.json (watched),
// and at the run's end from exit.json, so each is told once and in order even across restarts.
#include <fmt/format.h>

#include <cstdio>

#include "daemon/run_lifecycle.h"
#include "runner/run_files.h"

namespace gpuq::daemon {

std::vector<std::string> step_names_of(const JobSpec& spec) {
  std::vector<std::string> names;
  for (const auto& step : spec.steps) names.push_back(step.name.empty() ? default_step_name(step) : step.name);
  return names;
}

int first_step_of(const Job& job, const std::optional<Run>& last_begun) {
  const int count = static_cast<int>(job.spec.steps.size());
  if (count == 0 || job.steps_from_start || !last_begun) return 0;
  int next = resume_step(last_begun->steps, last_begun->first_step, count);
  return next >= count ? 0 : next;
}

void RunLifecycle::watch_steps(int64_t job_id) {
  LiveRun& live = running_.at(job_id);
  if (live.step_names.empty()) return;
  auto watch = world_.watch_file(runner::steps_path(live.run.run_dir), [this, job_id] { on_steps_changed(job_id); });
  if (!watch) {
    std::fprintf(stderr, "gpuq daemon: job %lld: %s; its steps are recorded when the run ends\n",
                 static_cast<long long>(job_id), watch.error().message.c_str());
    return;
  }
  live.steps_watch = std::move(*watch);
  // What the shim wrote before the watch began (an adopted run's steps) is read now.
  world_.post([this, job_id] { on_steps_changed(job_id); });
}

void RunLifecycle::on_steps_changed(int64_t job_id) {
  auto it = running_.find(job_id);
  // Once the shim has exited, its exit record has the last word (settle_run).
  if (it == running_.end() || stopping_ || !it->second.shim || it->second.ended) return;
  LiveRun& live = it->second;
  auto seen = world_.read_step_record(live.run.run_dir);
  if (!seen) {
    if (seen.error().code != Code::kNotFound) {
      std::fprintf(stderr, "gpuq daemon: job %lld: reading its steps: %s\n", static_cast<long long>(job_id),
                   seen.error().message.c_str());
    }
    return;
  }
  if (step_changes(live.run.steps, *seen).empty()) return;
  // Not recorded now (the store refused): the next change or the run's end records it.
  if (!host_.commit([&] { return write_steps(live, *seen); })) return;
  live.run.steps = std::move(*seen);
}

Status RunLifecycle::write_steps(const LiveRun& live, const std::vector<StepRun>& seen) {
  const Run& run = live.run;
  auto changes = step_changes(run.steps, seen);
  if (changes.empty()) return ok();
  if (auto st = store_.set_run_steps(run.id, seen); !st) return st;
  const size_t count = live.step_names.size();
  for (const StepChange& change : changes) {
    const StepRun& step = change.step;
    size_t index = static_cast<size_t>(step.index);
    nlohmann::json data = {{"step", step.index},
                           {"name", index < count ? nlohmann::json(live.step_names[index]) : nlohmann::json(nullptr)},
                           {"count", count}};
    if (change.started) {
      if (auto st = host_.add_event("job.step_started", run.job_id, run.number, data); !st) return st;
    }
    if (!change.finished) continue;
    data["state"] = to_string(step.state);
    data["exit_code"] = step.exit_code ? nlohmann::json(*step.exit_code) : nlohmann::json(nullptr);
    data["signal"] = step.signal ? nlohmann::json(*step.signal) : nlohmann::json(nullptr);
    if (step.started_at_ms > 0 && step.ended_at_ms >= step.started_at_ms) {
      data["duration_ms"] = step.ended_at_ms - step.started_at_ms;
    }
    if (auto st = host_.add_event("job.step_finished", run.job_id, run.number, data); !st) return st;
  }
  return ok();
}

}  // namespace gpuq::daemon
