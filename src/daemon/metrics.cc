// SPDX-License-Identifier: Apache-2.0
#include "daemon/metrics.h"

#include <algorithm>

namespace gpuq::daemon {

void Histogram::observe(double seconds) {
  seconds = std::max(0.0, seconds);  // a wall clock stepped back must not make a negative wait
  auto bound = std::lower_bound(kBounds.begin(), kBounds.end(), seconds);  // first bound >= it
  ++counts[static_cast<size_t>(bound - kBounds.begin())];
  sum += seconds;
  ++count;
}

std::array<int64_t, Histogram::kBounds.size() + 1> Histogram::cumulative() const {
  std::array<int64_t, kBounds.size() + 1> out{};
  int64_t running = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    running += counts[i];
    out[i] = running;
  }
  return out;
}

void Metrics::set_baseline(const std::vector<std::pair<std::string, int64_t>>& events_by_kind,
                           const std::vector<std::pair<std::string, int64_t>>& runs_by_outcome) {
  std::lock_guard lock(mutex_);
  values_.events_by_kind.clear();
  for (const auto& [kind, count] : events_by_kind) values_.events_by_kind[kind] += count;
  values_.runs_started = 0;
  values_.runs_finished.clear();
  for (const auto& [outcome, count] : runs_by_outcome) {
    // Every run row is a run that started; those still running have not finished.
    values_.runs_started += count;
    if (outcome != "running") values_.runs_finished[outcome] += count;
  }
}

void Metrics::count_event(std::string_view kind) {
  std::lock_guard lock(mutex_);
  auto it = values_.events_by_kind.find(kind);
  if (it == values_.events_by_kind.end()) {
    values_.events_by_kind.emplace(std::string(kind), 1);
  } else {
    ++it->second;
  }
}

void Metrics::run_started(double queue_wait_s, std::optional<double> submit_to_start_s) {
  std::lock_guard lock(mutex_);
  ++values_.runs_started;
  values_.queue_wait.observe(queue_wait_s);
  if (submit_to_start_s) values_.submit_to_start.observe(*submit_to_start_s);
}

void Metrics::run_finished(std::string_view outcome) {
  std::lock_guard lock(mutex_);
  auto it = values_.runs_finished.find(outcome);
  if (it == values_.runs_finished.end()) {
    values_.runs_finished.emplace(std::string(outcome), 1);
  } else {
    ++it->second;
  }
}

void Metrics::run_accounted(double cpu_seconds, std::optional<int64_t> peak_memory_bytes) {
  std::lock_guard lock(mutex_);
  ++values_.runs_accounted;
  values_.run_cpu_seconds += cpu_seconds;
  if (peak_memory_bytes && *peak_memory_bytes > values_.run_peak_memory_bytes_max) {
    values_.run_peak_memory_bytes_max = *peak_memory_bytes;
  }
}

MetricsSnapshot Metrics::snapshot() const {
  std::lock_guard lock(mutex_);
  return values_;
}

}  // namespace gpuq::daemon
