// SPDX-License-Identifier: Apache-2.0
// The counters and histograms behind GET /metrics (docs/api.md, "Metrics") that only the queue
// actor can know as they happen: events by kind, runs started and finished by outcome, how long
// jobs waited before a run (queue wait) and how long a job took from submit to its first start.
// Gauges that the store or the published pass already hold (jobs by state, GPUs by state) are
// read where they live, at scrape time, and are not kept here.
//
// The counters are all-time: Queue::start() sets them from the store (events and runs are never
// deleted), then the actor adds what it commits, so they survive a daemon restart. The
// histograms cover this daemon process only (they start empty).
//
// Owned by the Queue. Thread rules: every method is thread-safe (one mutex; the actor writes a
// few times per transition, the API thread copies a snapshot per scrape).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuq::daemon {

// A Prometheus-style histogram of durations in seconds, with fixed upper bounds chosen to
// resolve both a millisecond start on an idle GPU and a day in a busy queue. Plain value.
struct Histogram {
  static constexpr std::array<double, 14> kBounds = {0.005, 0.01, 0.05, 0.1, 0.5, 1,     5,
                                                     30,    60,   300,  900, 3600, 14400, 86400};
  // counts[i] observations fell in (kBounds[i-1], kBounds[i]]; the last entry is above every
  // bound (+Inf). Not cumulative: cumulative() is what the exposition format wants.
  std::array<int64_t, kBounds.size() + 1> counts{};
  double sum = 0;
  int64_t count = 0;

  void observe(double seconds);
  // The count of observations <= kBounds[i]; the last entry (+Inf) equals `count`.
  std::array<int64_t, kBounds.size() + 1> cumulative() const;
};

// A consistent copy of every registry value at one moment.
struct MetricsSnapshot {
  std::map<std::string, int64_t, std::less<>> events_by_kind;
  int64_t runs_started = 0;
  std::map<std::string, int64_t, std::less<>> runs_finished;  // by outcome ("succeeded", ...)
  Histogram queue_wait;                          // every run start
  Histogram submit_to_start;                     // first runs only
  // Runs whose cgroup accounted for them at cleanup (docs/containment.md), since the daemon
  // started: how many, their CPU time, and the highest peak memory among them (0: none known).
  int64_t runs_accounted = 0;
  double run_cpu_seconds = 0;
  int64_t run_peak_memory_bytes_max = 0;
};

class Metrics {
 public:
  // The all-time baselines, read from the store when the daemon starts; they replace
  // whatever was counted before.
  void set_baseline(const std::vector<std::pair<std::string, int64_t>>& events_by_kind,
                    const std::vector<std::pair<std::string, int64_t>>& runs_by_outcome);

  // One committed event of `kind`.
  void count_event(std::string_view kind);
  // A run started after waiting `queue_wait_s`; `submit_to_start_s` is set for a job's first
  // run only.
  void run_started(double queue_wait_s, std::optional<double> submit_to_start_s);
  // A run ended with `outcome` (to_string(RunOutcome)).
  void run_finished(std::string_view outcome);
  // A run's cgroup accounted for `cpu_seconds` and, where measured, `peak_memory_bytes`.
  void run_accounted(double cpu_seconds, std::optional<int64_t> peak_memory_bytes);

  MetricsSnapshot snapshot() const;

 private:
  mutable std::mutex mutex_;
  MetricsSnapshot values_;
};

}  // namespace gpuq::daemon
