// SPDX-License-Identifier: Apache-2.0
// GET /metrics: the daemon's numbers in the Prometheus text exposition format, version 0.0.4
// (docs/api.md, "Metrics"). Kept free of Beast so that it compiles fast and its text can be
// tested without a socket; the route in handlers.cc only wraps the text in a response.
//
// Exposition writes the format (HELP and TYPE before each family's samples, escaped label
// values, histograms as cumulative _bucket lines with _sum and _count); render_metrics() turns
// MetricsInputs into the daemon's families; gather_metrics() collects those inputs.
// Thread rules: Exposition and render_metrics() are plain values and pure functions;
// gather_metrics() reads `store`, so call it on the thread that owns that store (the API thread
// for the server's read-only store). The queue's waits() and metrics() it reads are thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/gpu_metrics.h"
#include "daemon/metrics.h"
#include "daemon/queue.h"
#include "store/store.h"

namespace gpuq::api {

// The Content-Type of the text format.
inline constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4";

using MetricLabels = std::vector<std::pair<std::string_view, std::string>>;

class Exposition {
 public:
  // Starts a family: its `# HELP` and `# TYPE` lines. Its samples follow.
  void family(std::string_view name, std::string_view type, std::string_view help);
  // `name{labels} value`. `name` is the family's, or the family's with a histogram suffix.
  void sample(std::string_view name, const MetricLabels& labels, double value);
  // A whole histogram family: HELP, TYPE, one _bucket per bound and +Inf, _sum, _count.
  void histogram(std::string_view name, std::string_view help, const daemon::Histogram& h);
  const std::string& text() const { return out_; }

 private:
  std::string out_;
};

// A label value with backslash, double quote and newline escaped.
std::string escape_label_value(std::string_view value);
// A sample value: integers without a fraction, +Inf/-Inf/NaN spelled as the format wants.
std::string format_metric_value(double value);

// Each hook's lag: events in the log after its cursor (set by whoever owns the hooks).
using HookLags = std::function<std::vector<std::pair<std::string, int64_t>>()>;

// One connection class of the listeners (api/connection_pools.h), as the server counts it.
struct ConnectionClassMetrics {
  std::string name;  // connection_class_name()
  int open = 0;
  int limit = 0;
  int64_t refused = 0;
  int64_t displaced = 0;
};

struct MetricsInputs {
  store::Store::Counts jobs_by_state;    // states with jobs; the rest are shown as 0
  std::vector<std::string_view> gpus;    // each GPU's state (api/gpu_view.h)
  std::vector<GpuMetricsRow> gpu_rows;   // each GPU's readings, state and holder
  std::string hostname;                  // the per-GPU families' Hostname label
  daemon::MetricsSnapshot counters;
  std::vector<std::pair<std::string, int64_t>> hook_lags;
  double last_pass_seconds = 0;
  std::vector<ConnectionClassMetrics> connections;  // set by the server: gather_metrics leaves it empty
};

std::string render_metrics(const MetricsInputs& inputs);

// Reads jobs by state and the running runs from `store`, the rest from `queue`, and hook lags
// from `hook_lags` when it is set.
Result<MetricsInputs> gather_metrics(store::Store& store, const daemon::Queue& queue,
                                     const HookLags& hook_lags);

}  // namespace gpuq::api
