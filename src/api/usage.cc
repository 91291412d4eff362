// SPDX-License-Identifier: Apache-2.0
#include "api/usage.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>

namespace gpuq::api {
namespace {

// The key of runs whose job has no user (jobs of older daemons).
constexpr const char* kUnknownUser = "(unknown)";

using UsageRun = store::Store::UsageRun;

int64_t end_or_now(const UsageRun& run, int64_t now_ms) {
  return run.ended_at_ms != 0 ? run.ended_at_ms : std::max(now_ms, run.started_at_ms);
}

// The overlap of [from, to) with the window.
int64_t overlap(int64_t from, int64_t to, const Window& window) {
  int64_t a = std::max(from, window.from_ms);
  int64_t b = std::min(to, window.to_ms);
  return b > a ? b - a : 0;
}

std::string key_of(const UsageRun& run, GroupBy by) {
  switch (by) {
    case GroupBy::kUser: return run.user.empty() ? kUnknownUser : run.user;
    case GroupBy::kName: return run.name.empty() ? "(unnamed)" : run.name;
    case GroupBy::kOutcome: return std::string(to_string(run.outcome));
    case GroupBy::kGpu: break;
  }
  return "";
}

struct Tally {
  double gpu_hours = 0;
  int64_t runs = 0;
  std::set<int64_t> jobs;
};

WaitStats stats_of(std::string key, std::vector<double> waits) {
  WaitStats s;
  s.key = std::move(key);
  s.jobs = static_cast<int64_t>(waits.size());
  s.p50_s = percentile(waits, 50);
  s.p90_s = percentile(waits, 90);
  s.max_s = waits.empty() ? 0 : *std::max_element(waits.begin(), waits.end());
  return s;
}

}  // namespace

int64_t clipped_ms(const UsageRun& run, const Window& window, int64_t now_ms) {
  return overlap(run.started_at_ms, end_or_now(run, now_ms), window);
}

bool parse_group_by(std::string_view text, GroupBy& out) {
  for (GroupBy by : {GroupBy::kUser, GroupBy::kName, GroupBy::kOutcome, GroupBy::kGpu}) {
    if (text == to_string(by)) {
      out = by;
      return true;
    }
  }
  return false;
}

std::string_view to_string(GroupBy by) {
  switch (by) {
    case GroupBy::kUser: return "user";
    case GroupBy::kName: return "name";
    case GroupBy::kOutcome: return "outcome";
    case GroupBy::kGpu: break;
  }
  return "gpu";
}

std::vector<UsageGroup> gpu_hours_by(const std::vector<UsageRun>& runs, GroupBy by,
                                     const Window& window, int64_t now_ms,
                                     const std::vector<std::string>& all_gpus) {
  std::map<std::string, Tally> tallies;
  if (by == GroupBy::kGpu) {
    for (const auto& gpu : all_gpus) tallies[gpu];
  }
  for (const UsageRun& run : runs) {
    int64_t ms = clipped_ms(run, window, now_ms);
    if (by == GroupBy::kGpu) {
      for (const auto& gpu : run.gpus) {
        Tally& t = tallies[gpu];
        t.gpu_hours += ms / kMsPerHour;
        ++t.runs;
        t.jobs.insert(run.job_id);
      }
      continue;
    }
    Tally& t = tallies[key_of(run, by)];
    t.gpu_hours += static_cast<double>(ms) * static_cast<double>(run.gpus.size()) / kMsPerHour;
    ++t.runs;
    t.jobs.insert(run.job_id);
  }
  double machine = static_cast<double>(window.length_ms()) * static_cast<double>(all_gpus.size()) / kMsPerHour;
  std::vector<UsageGroup> out;
  for (auto& [key, t] : tallies) {
    UsageGroup g;
    g.key = key;
    g.gpu_hours = t.gpu_hours;
    g.share = machine > 0 ? t.gpu_hours / machine : 0;
    g.runs = t.runs;
    g.jobs = static_cast<int64_t>(t.jobs.size());
    out.push_back(std::move(g));
  }
  std::stable_sort(out.begin(), out.end(), [](const UsageGroup& a, const UsageGroup& b) {
    return a.gpu_hours > b.gpu_hours;
  });
  return out;
}

void add_fair_shares(std::vector<UsageGroup>& by_user) {
  double used = 0;
  int users = 0;
  for (const UsageGroup& g : by_user) {
    used += g.gpu_hours;
    users += g.key != kUnknownUser;
  }
  for (UsageGroup& g : by_user) {
    g.used_share = used > 0 ? g.gpu_hours / used : 0;
    g.fair_share = g.key == kUnknownUser || users == 0 ? -1 : 1.0 / users;
  }
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  double rank = std::ceil(std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(values.size()));
  size_t index = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return values[std::min(index, values.size() - 1)];
}

Waits waits(const std::vector<UsageRun>& runs, const Window& window) {
  std::map<std::string, std::vector<double>> by_user;
  std::map<int, std::vector<double>> by_gpus;
  for (const UsageRun& run : runs) {
    if (run.number != 1 || run.started_at_ms < window.from_ms || run.started_at_ms >= window.to_ms) continue;
    double wait_s = static_cast<double>(std::max<int64_t>(0, run.started_at_ms - run.submitted_at_ms)) / 1000.0;
    by_user[run.user.empty() ? kUnknownUser : run.user].push_back(wait_s);
    by_gpus[run.gpus_requested].push_back(wait_s);
  }
  Waits out;
  for (auto& [user, list] : by_user) out.by_user.push_back(stats_of(user, std::move(list)));
  for (auto& [gpus, list] : by_gpus) out.by_gpus.push_back(stats_of(std::to_string(gpus), std::move(list)));
  return out;
}

double idle_held_gpu_hours(const std::vector<UsageRun>& runs, const store::Store::SamplesByRun& samples,
                           int idle_utilization, int64_t max_gap_ms, const Window& window,
                           int64_t now_ms) {
  double hours = 0;
  for (const UsageRun& run : runs) {
    auto it = samples.find(run.run_id);
    if (it == samples.end() || run.gpus.empty()) continue;
    const auto& list = it->second;
    int64_t end = end_or_now(run, now_ms);
    for (size_t i = 0; i < list.size(); ++i) {
      const RunSample& s = list[i];
      if (s.util < 0 || s.util > idle_utilization) continue;
      int64_t until = std::min(s.time_ms + max_gap_ms, end);
      if (i + 1 < list.size()) until = std::min(until, list[i + 1].time_ms);
      hours += static_cast<double>(overlap(s.time_ms, until, window)) *
               static_cast<double>(run.gpus.size()) / kMsPerHour;
    }
  }
  return hours;
}

std::map<std::string, double> lost_gpu_hours(const std::vector<UsageRun>& runs, const Window& window,
                                             int64_t now_ms) {
  std::map<std::string, double> out;
  for (RunOutcome o : {RunOutcome::kFailed, RunOutcome::kTimedOut, RunOutcome::kPreempted,
                       RunOutcome::kCancelled, RunOutcome::kLost, RunOutcome::kNotStarted}) {
    out[std::string(to_string(o))] = 0;
  }
  for (const UsageRun& run : runs) {
    auto it = out.find(std::string(to_string(run.outcome)));
    if (it == out.end()) continue;
    it->second += static_cast<double>(clipped_ms(run, window, now_ms)) *
                  static_cast<double>(run.gpus.size()) / kMsPerHour;
  }
  return out;
}

std::vector<IdleInterval> idle_while_waiting(const std::vector<Event>& events, const Window& window,
                                             int64_t now_ms) {
  std::vector<IdleInterval> raw;
  bool open = false;
  int64_t since = 0;
  int free_gpus = 0;
  auto close = [&](int64_t at) {
    if (at > since) raw.push_back({since, at, free_gpus});
  };
  for (const Event& e : events) {
    std::string phase = e.data.value("phase", "");
    int free = e.data.value("free_gpus", 0);
    int64_t began = e.time_ms - e.data.value("for_ms", int64_t{0});
    if (phase == "end") {
      if (open) close(e.time_ms);
      open = false;
    } else if (phase == "start" || phase == "repeat") {
      if (open) {
        close(e.time_ms);
        since = e.time_ms;
      } else {
        since = std::min(began, e.time_ms);  // the episode held since then
      }
      open = true;
      free_gpus = free;
    }
  }
  if (open) close(std::max(now_ms, since));
  std::vector<IdleInterval> out;
  for (const IdleInterval& i : raw) {
    IdleInterval c{std::max(i.from_ms, window.from_ms), std::min(i.to_ms, window.to_ms), i.free_gpus};
    if (c.to_ms > c.from_ms && c.free_gpus > 0) out.push_back(c);
  }
  return out;
}

double interval_gpu_hours(const std::vector<IdleInterval>& intervals) {
  double hours = 0;
  for (const auto& i : intervals) hours += static_cast<double>(i.to_ms - i.from_ms) * i.free_gpus / kMsPerHour;
  return hours;
}

std::vector<RunSample> downsample(const std::vector<RunSample>& samples, size_t max_points) {
  if (samples.size() <= max_points || max_points == 0) {
    return max_points == 0 ? std::vector<RunSample>{} : samples;
  }
  std::vector<RunSample> out;
  size_t n = samples.size();
  for (size_t b = 0; b < max_points; ++b) {
    size_t first = b * n / max_points;
    size_t last = (b + 1) * n / max_points;  // exclusive
    RunSample merged;
    merged.time_ms = samples[first].time_ms;
    int64_t sum = 0, known = 0;
    for (size_t i = first; i < last; ++i) {
      if (samples[i].util >= 0) {
        sum += samples[i].util;
        ++known;
      }
      merged.mem_mib = std::max(merged.mem_mib, samples[i].mem_mib);
    }
    merged.util = known ? static_cast<int>((sum + known / 2) / known) : -1;
    out.push_back(merged);
  }
  return out;
}

}  // namespace gpuq::api
