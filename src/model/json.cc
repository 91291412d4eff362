// SPDX-License-Identifier: Apache-2.0
#include "model/json.h"

#include <algorithm>

#include "base/time.h"
#include "model/job_steps.h"

namespace gpuq {

namespace {
nlohmann::json time_or_null(int64_t ms) {
  return ms == 0 ? nlohmann::json(nullptr) : nlohmann::json(format_rfc3339(ms));
}

template <typename T>
nlohmann::json int_or_null(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

// The step the job's running run is in now; null when none.
nlohmann::json running_step(const Job& job) {
  if (job.state != JobState::kRunning || job.runs.empty()) return nullptr;
  const Run& run = job.runs.back();
  if (run.outcome != RunOutcome::kRunning) return nullptr;
  for (const StepRun& step : run.steps) {
    if (step.state == StepState::kRunning) return step.index;
  }
  return nullptr;
}

// The command as a person reads it: the script name and its arguments, or the argv.
std::string command_line(const JobSpec& spec) {
  if (!spec.steps.empty()) {
    std::string steps;
    for (const auto& step : spec.steps) steps += (steps.empty() ? "" : " ; ") + (step.name.empty() ? default_step_name(step) : step.name);
    return steps;
  }
  std::string out = spec.script_name.empty() ? "" : spec.script_name;
  const auto& words = spec.script_name.empty() ? spec.argv : spec.script_args;
  for (const auto& w : words) {
    if (!out.empty()) out += ' ';
    out += w;
  }
  return out;
}
nlohmann::json deps_json(const JobSpec& spec) {
  nlohmann::json deps = nlohmann::json::array();
  for (const auto& d : spec.deps) {
    nlohmann::json entry = {{"kind", to_string(d.kind)}, {"target", d.target}};
    entry["job"] = d.job_id ? nlohmann::json(d.job_id) : nlohmann::json(nullptr);
    deps.push_back(std::move(entry));
  }
  return deps;
}
}  // namespace

nlohmann::json run_to_json(const Run& run) {
  nlohmann::json gpus = nlohmann::json::array();
  if (run.gpu_indices.size() == run.gpus.size()) {
    for (int i : run.gpu_indices) gpus.push_back(i);
  } else {
    for (const auto& name : run.gpus) gpus.push_back(name);
  }
  nlohmann::json j = {
      {"number", run.number},
      {"gpus", gpus},
      {"started_at", time_or_null(run.started_at_ms)},
      {"ended_at", time_or_null(run.ended_at_ms)},
      {"exit_code", run.exit_code ? nlohmann::json(*run.exit_code) : nlohmann::json(nullptr)},
      {"signal", run.signal ? nlohmann::json(*run.signal) : nlohmann::json(nullptr)},
      {"outcome", to_string(run.outcome)},
      {"verified", run.verified ? nlohmann::json(*run.verified) : nlohmann::json(nullptr)},
      {"started_at_ms", run.started_at_ms},
      {"ended_at_ms", run.ended_at_ms == 0 ? nlohmann::json(nullptr) : nlohmann::json(run.ended_at_ms)},
      {"run_id", run.run_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(run.run_id)},
      {"peak_gpu_mem_mib",
       run.peak_gpu_mem_mib ? nlohmann::json(*run.peak_gpu_mem_mib) : nlohmann::json(nullptr)},
      {"preempted_by", run.preempted_by ? nlohmann::json(run.preempted_by) : nlohmann::json(nullptr)},
      {"preempt_deadline", time_or_null(run.preempt_deadline_ms)},
      // Why output.log may lack output (a full disk, the [runs] max_log cap); null when whole.
      {"log_note", run.log_note.empty() ? nlohmann::json(nullptr) : nlohmann::json(run.log_note)},
      {"log_incomplete", !run.log_note.empty()},
      // What the run's cgroup accounted for (docs/containment.md); null without one.
      {"cpu_seconds", run.cpu_usec ? nlohmann::json(static_cast<double>(*run.cpu_usec) / 1e6) : nlohmann::json(nullptr)},
      {"peak_memory_bytes", run.peak_memory_bytes ? nlohmann::json(*run.peak_memory_bytes) : nlohmann::json(nullptr)},
  };
  // The GPUs its processes were seen on, in the form of `gpus`; a mismatch is a process on a
  // GPU the run was not given.
  nlohmann::json seen = nlohmann::json::array();
  if (run.gpu_indices.size() == run.gpus.size() && run.seen_gpu_indices.size() == run.seen_gpus.size()) {
    for (int i : run.seen_gpu_indices) seen.push_back(i);
  } else {
    for (const auto& name : run.seen_gpus) seen.push_back(name);
  }
  bool mismatch = false;
  for (const auto& name : run.seen_gpus) {
    mismatch = mismatch || std::find(run.gpus.begin(), run.gpus.end(), name) == run.gpus.end();
  }
  j["seen_gpus"] = std::move(seen);
  j["gpu_mismatch"] = mismatch;
  if (!run.steps.empty() || run.first_step != 0) {
    j["first_step"] = run.first_step;
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& step : run.steps) {
      nlohmann::json entry = step_run_to_json(step);
      entry["log_end"] =
          step_reached(step) ? int_or_null(step_log_end(run, step)) : nlohmann::json(nullptr);
      steps.push_back(std::move(entry));
    }
    j["steps"] = std::move(steps);
  }
  return j;
}

nlohmann::json job_steps_to_json(const Job& job) {
  nlohmann::json steps = nlohmann::json::array();
  for (size_t i = 0; i < job.spec.steps.size(); ++i) {
    const JobStep& spec = job.spec.steps[i];
    // The step as the newest run that reached it left it.
    auto found = newest_run_of_step(job, static_cast<int>(i));
    const StepRun* latest = found ? found->step : nullptr;
    std::optional<int64_t> log_end = found ? step_log_end(*found->run, *latest) : std::nullopt;
    nlohmann::json entry = {
        {"index", i},
        {"name", spec.name.empty() ? default_step_name(spec) : spec.name},
        {"state", latest ? to_string(latest->state) : "pending"},
        {"started", time_or_null(latest ? latest->started_at_ms : 0)},
        {"ended", time_or_null(latest ? latest->ended_at_ms : 0)},
        {"exit_code", latest ? int_or_null(latest->exit_code) : nlohmann::json(nullptr)},
        {"signal", latest ? int_or_null(latest->signal) : nlohmann::json(nullptr)},
        {"run", found ? nlohmann::json(found->run->number) : nlohmann::json(nullptr)},
        {"image", spec.image.empty() ? nlohmann::json(nullptr) : nlohmann::json(spec.image)},
        {"log_offset", latest ? nlohmann::json(latest->log_offset) : nlohmann::json(nullptr)},
        {"log_end", int_or_null(log_end)},
    };
    steps.push_back(std::move(entry));
  }
  return steps;
}

nlohmann::json job_to_json(const Job& job) {
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& r : job.runs) runs.push_back(run_to_json(r));
  return {
      {"id", job.id},
      {"name", job.spec.name.empty() ? nlohmann::json(nullptr) : nlohmann::json(job.spec.name)},
      {"user", job.spec.user.empty() ? nlohmann::json(nullptr) : nlohmann::json(job.spec.user)},
      {"state", to_string(job.state)},
      {"priority", job.spec.priority},
      {"gpus_requested", job.spec.gpus},
      {"reason", job.reason},
      {"submitted_at", time_or_null(job.submitted_at_ms)},
      {"submitted_at_ms", job.submitted_at_ms},
      {"array", job.array_id ? nlohmann::json(job.array_id) : nlohmann::json(nullptr)},
      {"finished_at", time_or_null(job.finished_at_ms)},
      {"command", command_line(job.spec)},
      {"cwd", job.spec.cwd},
      {"runs", runs},
      {"deps", deps_json(job.spec)},
      {"lanes", job.spec.lanes},
      {"retries", job.spec.retries},
      {"timeout_ms", job.spec.timeout_ms ? nlohmann::json(job.spec.timeout_ms) : nlohmann::json(nullptr)},
      {"est_ms", job.spec.estimate_ms ? nlohmann::json(job.spec.estimate_ms) : nlohmann::json(nullptr)},
      {"done_if", job.spec.done_if.empty() ? nlohmann::json(nullptr) : nlohmann::json(job.spec.done_if)},
      {"not_before", time_or_null(job.spec.not_before_ms)},
      {"retry_at", time_or_null(job.retry_at_ms)},
      {"source", job.spec.source.empty() ? nlohmann::json(nullptr) : nlohmann::json(job.spec.source)},
      {"fleet_id", job.spec.fleet_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(job.spec.fleet_id)},
      {"preempt", to_string(job.spec.preempt)},
      {"restart_within_ms", job.spec.restart_within_ms ? nlohmann::json(job.spec.restart_within_ms)
                                                        : nlohmann::json(nullptr)},
      {"requires_warn_ms", job.spec.requires_warn_ms >= 0 ? nlohmann::json(job.spec.requires_warn_ms)
                                                          : nlohmann::json(nullptr)},
      {"quiet_ms", job.spec.quiet_ms >= 0 ? nlohmann::json(job.spec.quiet_ms) : nlohmann::json(nullptr)},
      {"warn_after_ms", job.spec.warn_after_ms ? nlohmann::json(job.spec.warn_after_ms) : nlohmann::json(nullptr)},
      {"steps", job_steps_to_json(job)},
      {"step", running_step(job)},
      {"image", job.spec.image.empty() ? nlohmann::json(nullptr) : nlohmann::json(job.spec.image)},
      // How a container job's images are pulled and whom it runs as; null without an image.
      {"pull",
       uses_image(job.spec) ? nlohmann::json(to_string(job.spec.pull)) : nlohmann::json(nullptr)},
      {"container_user", job.spec.container_user.empty()
                             ? nlohmann::json(nullptr)
                             : nlohmann::json(job.spec.container_user)},
  };
}

nlohmann::json array_to_json(const JobArray& array) {
  nlohmann::json sweep = nlohmann::json::parse(array.sweep, nullptr, false);
  return {
      {"id", array.id},
      {"name", array.name},
      {"size", array.size},
      {"max_running", array.max_running > 0 ? nlohmann::json(array.max_running) : nlohmann::json()},
      {"sweep", sweep.is_discarded() ? nlohmann::json(array.sweep) : sweep},
      {"submitted_at", time_or_null(array.submitted_at_ms)},
  };
}

}  // namespace gpuq
