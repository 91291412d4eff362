// SPDX-License-Identifier: Apache-2.0
#include "api/metrics.h"


#include <array>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <tuple>

#include "api/gpu_view.h"
#include "model/job.h"

namespace gpuq::api {
namespace {

// HELP text may hold anything but a raw newline or an unescaped backslash.
std::string escape_help(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

constexpr JobState kJobStates[] = {JobState::kPending,   JobState::kHeld,   JobState::kRunning,
                                   JobState::kSucceeded, JobState::kFailed, JobState::kCancelled,
                                   JobState::kBlocked,   JobState::kSkipped};
constexpr RunOutcome kEndOutcomes[] = {RunOutcome::kSucceeded, RunOutcome::kFailed,    RunOutcome::kTimedOut,
                                       RunOutcome::kCancelled, RunOutcome::kPreempted, RunOutcome::kLost,
                                       RunOutcome::kNotStarted};

}  // namespace

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string format_metric_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    return fmt::format("{}", static_cast<int64_t>(value));
  }
  return fmt::format("{}", value);  // the shortest text that reads back as the same double
}

void Exposition::family(std::string_view name, std::string_view type, std::string_view help) {
  out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, escape_help(help), name, type);
}

void Exposition::sample(std::string_view name, const MetricLabels& labels, double value) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) out_ += ',';
      out_ += fmt::format("{}=\"{}\"", labels[i].first, escape_label_value(labels[i].second));
    }
    out_ += '}';
  }
  out_ += ' ';
  out_ += format_metric_value(value);
  out_ += '\n';
}

void Exposition::histogram(std::string_view name, std::string_view help, const daemon::Histogram& h) {
  family(name, "histogram", help);
  std::string bucket = fmt::format("{}_bucket", name);
  auto cumulative = h.cumulative();
  for (size_t i = 0; i < daemon::Histogram::kBounds.size(); ++i) {
    sample(bucket, {{"le", format_metric_value(daemon::Histogram::kBounds[i])}},
           static_cast<double>(cumulative[i]));
  }
  sample(bucket, {{"le", "+Inf"}}, static_cast<double>(cumulative.back()));
  sample(fmt::format("{}_sum", name), {}, h.sum);
  sample(fmt::format("{}_count", name), {}, static_cast<double>(h.count));
}

std::string render_metrics(const MetricsInputs& in) {
  Exposition x;
  x.family("gpuq_up", "gauge", "1 while the daemon answers.");
  x.sample("gpuq_up", {}, 1);

  x.family("gpuq_jobs", "gauge", "Jobs by state (every job in the store).");
  std::map<std::string, int64_t, std::less<>> jobs(in.jobs_by_state.begin(), in.jobs_by_state.end());
  for (JobState state : kJobStates) {
    auto it = jobs.find(to_string(state));
    x.sample("gpuq_jobs", {{"state", std::string(to_string(state))}},
             it == jobs.end() ? 0.0 : static_cast<double>(it->second));
  }

  x.family("gpuq_gpus", "gauge", "GPUs by state, as GET /v1/gpus shows them.");
  for (std::string_view state : kGpuStates) {
    int64_t n = 0;
    for (std::string_view s : in.gpus) n += s == state ? 1 : 0;
    x.sample("gpuq_gpus", {{"state", std::string(state)}}, static_cast<double>(n));
  }
  render_gpu_metrics(x, in.gpu_rows, in.hostname);

  x.family("gpuq_runs_started_total", "counter", "Runs started, all time.");
  x.sample("gpuq_runs_started_total", {}, static_cast<double>(in.counters.runs_started));

  x.family("gpuq_runs_finished_total", "counter", "Runs ended, by outcome, all time.");
  auto finished = in.counters.runs_finished;  // every outcome shown, with 0 before the first
  for (RunOutcome outcome : kEndOutcomes) finished.try_emplace(std::string(to_string(outcome)), 0);
  for (const auto& [outcome, n] : finished) {
    x.sample("gpuq_runs_finished_total", {{"outcome", outcome}}, static_cast<double>(n));
  }

  x.histogram("gpuq_queue_wait_seconds",
              "Time a job waited in the queue before a run started: since it was submitted, "
              "retried, requeued or preempted, whichever came last. Since the daemon started.",
              in.counters.queue_wait);
  x.histogram("gpuq_submit_to_start_seconds",
              "Time from submit to a job's first run. Since the daemon started.",
              in.counters.submit_to_start);

  // What runs' cgroups accounted for (docs/containment.md); 0 under the marker sweep.
  x.family("gpuq_runs_accounted_total", "counter", "Runs whose cgroup accounted for them. Since the daemon started.");
  x.sample("gpuq_runs_accounted_total", {}, static_cast<double>(in.counters.runs_accounted));
  x.family("gpuq_run_cpu_seconds_total", "counter", "CPU time of those runs. Since the daemon started.");
  x.sample("gpuq_run_cpu_seconds_total", {}, in.counters.run_cpu_seconds);
  x.family("gpuq_run_peak_memory_bytes_max", "gauge",
           "The highest peak memory among those runs (0 without the memory controller).");
  x.sample("gpuq_run_peak_memory_bytes_max", {}, static_cast<double>(in.counters.run_peak_memory_bytes_max));

  x.family("gpuq_events_total", "counter", "Events in the log, by kind, all time.");
  for (const auto& [kind, n] : in.counters.events_by_kind) {
    x.sample("gpuq_events_total", {{"kind", kind}}, static_cast<double>(n));
  }

  x.family("gpuq_hook_lag_events", "gauge", "Events in the log that a hook has not handled yet.");
  for (const auto& [hook, lag] : in.hook_lags) {
    x.sample("gpuq_hook_lag_events", {{"hook", hook}}, static_cast<double>(lag));
  }

  x.family("gpuq_last_pass_seconds", "gauge", "How long the last scheduling pass took.");
  x.sample("gpuq_last_pass_seconds", {}, in.last_pass_seconds);

  // The listeners' connection classes (docs/api.md, "Connections").
  using Field = double (*)(const ConnectionClassMetrics&);
  const std::array<std::tuple<const char*, const char*, const char*, Field>, 4> families = {{
      {"gpuq_connections_open", "gauge", "Connections open now, by class.",
       [](const ConnectionClassMetrics& c) { return static_cast<double>(c.open); }},
      {"gpuq_connections_limit", "gauge", "The most connections a class holds at once.",
       [](const ConnectionClassMetrics& c) { return static_cast<double>(c.limit); }},
      {"gpuq_connections_refused_total", "counter",
       "Connections answered 503 because their class was full and none of it was idle. Since the daemon started.",
       [](const ConnectionClassMetrics& c) { return static_cast<double>(c.refused); }},
      {"gpuq_connections_displaced_total", "counter",
       "Idle connections closed to make room for a newcomer of their class. Since the daemon started.",
       [](const ConnectionClassMetrics& c) { return static_cast<double>(c.displaced); }},
  }};
  for (const auto& [name, type, help, value] : families) {
    if (in.connections.empty()) break;
    x.family(name, type, help);
    for (const ConnectionClassMetrics& c : in.connections) x.sample(name, {{"class", c.name}}, value(c));
  }
  return x.text();
}

Result<MetricsInputs> gather_metrics(store::Store& store, const daemon::Queue& queue,
                                     const HookLags& hook_lags) {
  MetricsInputs in;
  auto jobs = store.job_counts();
  if (!jobs) return tl::unexpected(jobs.error());
  in.jobs_by_state = std::move(*jobs);
  auto running = store.running_runs();
  if (!running) return tl::unexpected(running.error());
  auto waits = queue.waits();
  for (const GpuView& view : gpu_views(queue.inventory().resources, *running, *waits)) {
    in.gpus.push_back(view.state);
  }
  auto rows = gather_gpu_metrics(store, queue, *running, *waits);
  if (!rows) return tl::unexpected(rows.error());
  in.gpu_rows = std::move(*rows);
  in.hostname = metrics_hostname();
  in.counters = queue.metrics().snapshot();
  if (hook_lags) in.hook_lags = hook_lags();
  in.last_pass_seconds = static_cast<double>(waits->pass_us) / 1e6;
  return in;
}

}  // namespace gpuq::api
