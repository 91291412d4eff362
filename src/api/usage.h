// SPDX-License-Identifier: Apache-2.0
// The arithmetic behind GET /v1/timeline and GET /v1/report (docs/api.md, "Report"): runs
// clipped to a time window, GPU-hours grouped by user, name, outcome or GPU, shares of the
// machine, wait percentiles, GPU-hours held while idle (from utilisation samples), GPU-hours
// lost by outcome, GPUs idle while jobs waited (from queue.idle_with_work episodes), and the
// downsampling of a run's samples for its page. The store reads the rows
// (store/store_usage.cc); these only compute.
// Pure functions of explicit rows and times; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/event.h"
#include "model/job.h"
#include "store/store.h"

namespace gpuq::api {

// [from_ms, to_ms): a half-open window of wall-clock time.
struct Window {
  int64_t from_ms = 0;
  int64_t to_ms = 0;
  int64_t length_ms() const { return to_ms > from_ms ? to_ms - from_ms : 0; }
};

// How long a run overlapped `window`; a running run (ended_at_ms 0) counts up to `now_ms`.
int64_t clipped_ms(const store::Store::UsageRun& run, const Window& window, int64_t now_ms);

constexpr double kMsPerHour = 3'600'000.0;

// One row of the report's `groups`.
struct UsageGroup {
  std::string key;
  double gpu_hours = 0;
  double share = 0;   // of the machine's GPU-hours in the window (0 when it has none)
  int64_t runs = 0;   // runs that overlapped the window
  int64_t jobs = 0;   // distinct jobs of those runs
  // By user only (add_fair_shares), else -1: the user's share of the GPU-hours all users used
  // in the window, and their fair share of them, 1/N with N the users who ran anything in it
  // ("(unknown)", jobs of older daemons, is nobody's: it has none and is not counted).
  double used_share = -1;
  double fair_share = -1;
};

enum class GroupBy { kUser, kName, kOutcome, kGpu };
// "user", "name", "outcome", "gpu"; false for anything else.
bool parse_group_by(std::string_view text, GroupBy& out);
std::string_view to_string(GroupBy by);

// GPU-hours by key, largest first (then by key). A run counts its clipped time times its GPU
// count; by GPU, each GPU it held counts the clipped time once, and every GPU of `all_gpus`
// has a row (0 when unused). A job without a name is "(unnamed)"; one of an older daemon,
// without a user, "(unknown)".
std::vector<UsageGroup> gpu_hours_by(const std::vector<store::Store::UsageRun>& runs, GroupBy by,
                                     const Window& window, int64_t now_ms,
                                     const std::vector<std::string>& all_gpus);

// Fills used_share and fair_share of groups by user (see UsageGroup).
void add_fair_shares(std::vector<UsageGroup>& by_user);

// The nearest-rank percentile (`p` in 0..100) of `values` (sorted here); 0 when empty.
double percentile(std::vector<double> values, double p);

// Waits of jobs whose first run started in the window: the first run's start less the job's
// submit time (time held or waiting for dependencies included).
struct WaitStats {
  std::string key;    // the user, or the GPU count as text
  double p50_s = 0;
  double p90_s = 0;
  double max_s = 0;
  int64_t jobs = 0;
};
struct Waits {
  std::vector<WaitStats> by_user;  // by key
  std::vector<WaitStats> by_gpus;  // by GPU count, ascending
};
Waits waits(const std::vector<store::Store::UsageRun>& runs, const Window& window);

// GPU-hours of runs whose samples say their GPUs were idle: each sample stands for the time
// until the next one, at most `max_gap_ms` and never past the run's end (or `now_ms`), clipped
// to the window; it is idle when its utilisation is known and at most `idle_utilization`
// percent. Multiplied by the run's GPU count.
double idle_held_gpu_hours(const std::vector<store::Store::UsageRun>& runs,
                           const store::Store::SamplesByRun& samples, int idle_utilization,
                           int64_t max_gap_ms, const Window& window, int64_t now_ms);

// GPU-hours of runs that ended failed, timed-out, preempted, cancelled or lost, by outcome
// (every one of those five keys present).
std::map<std::string, double> lost_gpu_hours(const std::vector<store::Store::UsageRun>& runs,
                                             const Window& window, int64_t now_ms);

// A stretch of time with GPUs free while jobs waited.
struct IdleInterval {
  int64_t from_ms = 0;
  int64_t to_ms = 0;
  int free_gpus = 0;
  bool operator==(const IdleInterval&) const = default;
};
// The intervals told by queue.idle_with_work events (oldest first; the latest one before the
// window included): an episode runs from its `since` (the start event's time less its
// `for_ms`) to its end event, or to `now_ms` while it is open; each start or repeat event
// carries the free GPU count from its time on. Clipped to the window.
std::vector<IdleInterval> idle_while_waiting(const std::vector<Event>& events,
                                             const Window& window, int64_t now_ms);
double interval_gpu_hours(const std::vector<IdleInterval>& intervals);

// At most `max_points` samples, in time order: consecutive samples are merged into buckets of
// equal count, each with its first time, the mean of its known utilisations (-1 when none is
// known) and its largest memory.
std::vector<RunSample> downsample(const std::vector<RunSample>& samples, size_t max_points);

}  // namespace gpuq::api
