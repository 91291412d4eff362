// SPDX-License-Identifier: Apache-2.0
// A generated plan file (spec/plan.h's format) for tests and benchmarks of `gpuq simulate`:
// N jobs with the variety of a real research backlog — 0 to 6 GPUs (8 minus the reservation), priorities by name and by
// number, estimates as est_hours and as est, afterok and afterany chains, a lane for
// downloads, a reservation, memory-sharing jobs, per-job env, and jobs that run one of a few
// scripts (with `#gpuq` headers) with their own args. The plan names lane `net`, so simulate
// it with a config.toml that has `[lanes.net]` (kConfig).
// Deterministic for a seed on every platform: it draws raw std::mt19937_64 outputs, never a
// std:: distribution (whose results the standard leaves to each library), so a golden result
// computed once holds everywhere. Header-only, pure; thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace gpuq::sim::testing {

// The config.toml the generated plan needs (its lane).
inline constexpr const char* kGeneratedPlanConfig = "[lanes.net]\ncapacity = 2\n";

struct GeneratedPlan {
  std::string plan;                                    // plan.json's text
  std::vector<std::pair<std::string, std::string>> scripts;  // file name (beside the plan), text
};

inline GeneratedPlan generate_plan(int jobs, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto below = [&](uint64_t n) { return static_cast<int64_t>(rng() % n); };
  auto id = [](int i) { return "job-" + std::to_string(i); };
  GeneratedPlan out;
  out.scripts = {{"train.sh", "#!/bin/bash\n#gpuq gpus=2\n#gpuq priority=normal\n#gpuq est=2h\n"
                              "python train.py \"$@\"\n"},
                 {"eval.sh", "#!/bin/bash\n#gpuq gpus=1\n#gpuq priority=high\n"
                             "python eval.py \"$@\"\n"}};
  const char* kGpus[] = {"0", "1", "1", "1", "1", "2", "2", "4", "6"};
  const char* kPriorities[] = {"\"high\"", "\"normal\"", "\"normal\"", "\"low\"", "20", "70"};
  std::vector<std::string> reserved;
  std::string text = "{\"jobs\": [\n";
  for (int i = 0; i < jobs; ++i) {
    std::string job = "  {\"id\": \"" + id(i) + "\"";
    int64_t kind = below(10);
    if (kind < 2) {  // a script; its headers give gpus, priority and maybe est
      bool train = kind == 0;
      job += std::string(", \"script\": \"") + (train ? "train.sh" : "eval.sh") +
             "\", \"args\": [\"--seed\", \"" + std::to_string(below(1000)) + "\"]";
      if (below(2) == 0) job += ", \"gpus\": " + std::string(kGpus[1 + below(8)]);
    } else if (kind == 2) {  // a download: no GPU, lane net
      job += ", \"command\": [\"fetch\", \"shard-" + std::to_string(i) +
             "\"], \"gpus\": 0, \"lanes\": [\"net\"]";
    } else if (kind == 3) {  // shares a GPU by memory
      job += ", \"command\": [\"python\", \"probe.py\"], \"gpus\": 1, \"share\": true, "
             "\"gpu_mem\": " +
             std::to_string(10000 + 10000 * below(4));
    } else {  // a job of the reservation (at most its 2 GPUs), or of the open pool
      bool in_reservation = below(40) == 0;
      if (in_reservation) reserved.push_back(id(i));
      job += ", \"command\": [\"python\", \"run.py\", \"--trial\", \"" + std::to_string(i) +
             "\"], \"gpus\": " + kGpus[in_reservation ? 1 + below(6) : below(9)];
    }
    if (kind != 0 && kind != 1) job += std::string(", \"priority\": ") + kPriorities[below(6)];
    // Estimates from 1 minute to 6 hours; a train.sh job may keep its header's 2h.
    if (kind != 0 || below(2) == 0) {
      int64_t minutes = 1 + below(360);
      if (below(2) == 0) {
        job += ", \"est_hours\": " + std::to_string(minutes / 60) + "." +
               std::to_string(minutes % 60 * 100 / 60 / 10) +
               std::to_string(minutes % 60 * 100 / 60 % 10);
      } else {
        job += ", \"est\": \"" + std::to_string(minutes) + "m\"";
      }
    }
    if (i > 0 && below(10) < 3) {  // dependencies on recent jobs, afterok or afterany
      job += ", \"deps\": [";
      int64_t count = 1 + below(2);
      for (int64_t k = 0; k < count; ++k) {
        int target = static_cast<int>(std::max<int64_t>(0, i - 1 - below(100)));
        job += std::string(k ? ", " : "") + "\"" + (below(4) == 0 ? "after:" : "") + id(target) +
               "\"";
      }
      job += "]";
    }
    if (below(20) == 0) job += ", \"env\": {\"RUN\": \"" + std::to_string(i) + "\"}";
    job += "}";
    text += job + (i + 1 < jobs ? ",\n" : "\n");
  }
  text += "]";
  if (!reserved.empty()) {  // a reservation lists at least one job
    text += ",\n\"reservations\": [{\"name\": \"big\", \"gpus\": [6, 7], \"jobs\": [";
    for (size_t k = 0; k < reserved.size(); ++k) text += (k ? ", \"" : "\"") + reserved[k] + "\"";
    text += "]}]";
  }
  text += "}\n";
  out.plan = std::move(text);
  return out;
}

// A job trace (sim/trace.h's CSV) of N jobs arriving over time: 1 to 8 GPUs, durations from
// 1 minute to 8 hours, estimates rounded up to a power of two minutes (as users guess), a few
// unknown, priorities by name.
inline std::string generate_trace(int jobs, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto below = [&](uint64_t n) { return static_cast<int64_t>(rng() % n); };
  const char* kGpus[] = {"1", "1", "1", "2", "2", "4", "8"};
  const char* kPriorities[] = {"high", "normal", "normal", "low"};
  std::string text = "id,submit_s,gpus,duration_s,priority,est_s\n";
  int64_t submit_s = 0;
  for (int i = 0; i < jobs; ++i) {
    submit_s += below(9600);  // about the rate 8 GPUs serve
    int64_t duration_s = 60 + below(8 * 3600);
    int64_t est_minutes = 1;
    while (est_minutes * 60 < duration_s) est_minutes *= 2;
    std::string est = below(20) == 0 ? "" : std::to_string(est_minutes * 60);
    text += "t" + std::to_string(i) + "," + std::to_string(submit_s) + "," + kGpus[below(7)] +
            "," + std::to_string(duration_s) + "," + kPriorities[below(4)] + "," + est + "\n";
  }
  return text;
}

}  // namespace gpuq::sim::testing
