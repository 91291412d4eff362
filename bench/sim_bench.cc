// SPDX-License-Identifier: Apache-2.0
// Times the simulator (src/sim) on a generated plan: N jobs (default 100,000) with random GPU
// counts 1-8, priorities high/normal/low, estimates from 1 minute to 6 hours (each job runs
// exactly its estimate, as in a plan) and some chains (every 10th job waits for an earlier
// one), on G GPUs (default 64), under each policy. Prints, per policy, the wall time of
// simulate() and the simulated makespan, utilization and the window statistics.
// Usage: sim_bench [--jobs N] [--gpus G] [--seed S] [--policy fifo|priority|backfill|all]
//                  [--max-window K]   (an approximation, see SimOptions::max_window)
//                  [--full-queue]     (no window: every pass sees the whole queue, for comparison)
//        sim_bench --write-plan DIR [--jobs N] [--seed S]
//                  writes DIR/plan.json (sim/testing/plan_generator.h), its scripts,
//                  DIR/config.toml and a trace of as many jobs, DIR/trace.csv, for timing
//                  `gpuq simulate DIR/plan.json --gpus 8 --config DIR/config.toml` and
//                  `gpuq simulate --trace DIR/trace.csv --gpus 8` as whole processes
// Timings are for comparison between builds on one machine, not assertions.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "base/duration.h"
#include "sim/simulate.h"
#include "sim/testing/plan_generator.h"

namespace {

std::vector<gpuq::sim::SimJob> generate(int count, uint32_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  std::vector<gpuq::sim::SimJob> jobs;
  jobs.reserve(static_cast<size_t>(count));
  const int kPriorities[] = {10, 50, 50, 50, 90};
  for (int i = 0; i < count; ++i) {
    gpuq::sim::SimJob j;
    j.name = fmt::format("job-{}", i);
    j.gpus = static_cast<int>(pick(1, 8));
    j.priority = kPriorities[pick(0, 4)];
    j.estimate_ms = j.duration_ms = pick(60, int64_t{6} * 3600) * 1000;
    if (i % 10 == 9) j.after = {fmt::format("job-{}", pick(std::max(0, i - 50), i - 1))};
    jobs.push_back(std::move(j));
  }
  return jobs;
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out);
}

int write_plan(const std::string& dir, int count, uint32_t seed) {
  auto generated = gpuq::sim::testing::generate_plan(count, seed);
  bool ok = write_file(dir + "/plan.json", generated.plan) &&
            write_file(dir + "/trace.csv", gpuq::sim::testing::generate_trace(count, seed)) &&
            write_file(dir + "/config.toml", gpuq::sim::testing::kGeneratedPlanConfig);
  for (const auto& [name, text] : generated.scripts) ok = ok && write_file(dir + "/" + name, text);
  if (!ok) {
    std::fprintf(stderr, "cannot write the plan into %s\n", dir.c_str());
    return 1;
  }
  fmt::print("{}/plan.json: {} jobs\n", dir, count);
  return 0;
}

const char* policy_name(gpuq::sched::Policy p) {
  switch (p) {
    case gpuq::sched::Policy::kFifo:
      return "fifo";
    case gpuq::sched::Policy::kPriority:
      return "priority";
    case gpuq::sched::Policy::kBackfill:
      return "backfill";
  }
  return "?";
}

}  // namespace

int main(int argc, char** argv) {
  int count = 100000, gpus = 64;
  uint32_t seed = 1;
  std::string only = "all";
  std::string plan_dir;
  size_t max_window = 0;
  gpuq::sim::SimOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--jobs") {
      count = std::atoi(value().c_str());
    } else if (a == "--gpus") {
      gpus = std::atoi(value().c_str());
    } else if (a == "--seed") {
      seed = static_cast<uint32_t>(std::atoi(value().c_str()));
    } else if (a == "--policy") {
      only = value();
    } else if (a == "--write-plan") {
      plan_dir = value();
    } else if (a == "--full-queue") {
      options.full_queue = true;
    } else if (a == "--max-window") {
      max_window = static_cast<size_t>(std::atoll(value().c_str()));
    } else {
      std::fprintf(stderr,
                   "usage: sim_bench [--jobs N] [--gpus G] [--seed S] [--policy P] "
                   "[--max-window K] [--full-queue] [--write-plan DIR]\n");
      return 2;
    }
  }
  if (!plan_dir.empty()) return write_plan(plan_dir, count, seed);
  auto jobs = generate(count, seed);
  gpuq::sim::SimMachine machine;
  machine.gpus = gpus;
  options.max_window = max_window;
  fmt::print("{} jobs on {} GPUs{}{}\n", count, gpus,
             options.full_queue ? ", whole queue each pass" : "",
             max_window ? fmt::format(", max window {}", max_window) : "");
  fmt::print("{:<9} {:>9} {:>9} {:>6} {:>8} {:>8} {:>11} {:>7} {:>9}\n", "policy", "wall",
             "makespan", "util", "events", "passes", "mean window", "max win", "completed");
  int status = 0;
  for (auto policy : {gpuq::sched::Policy::kFifo, gpuq::sched::Policy::kPriority,
                      gpuq::sched::Policy::kBackfill}) {
    if (only != "all" && only != policy_name(policy)) continue;
    auto begin = std::chrono::steady_clock::now();
    auto r = gpuq::sim::simulate(jobs, machine, policy, {}, options);
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    if (!r) {
      fmt::print("{:<9} error: {}\n", policy_name(policy), r.error().message);
      status = 1;
      continue;
    }
    const auto& s = r->stats;
    fmt::print("{:<9} {:>8.2f}s {:>9} {:>5.1f}% {:>8} {:>8} {:>11.1f} {:>7} {:>9}{}\n",
               policy_name(policy), wall, gpuq::format_duration(gpuq::Millis(r->makespan_ms)),
               r->utilization * 100, s.events, s.passes,
               s.passes ? static_cast<double>(s.jobs_passed) / static_cast<double>(s.passes) : 0.0,
               s.max_window, s.completed_passes,
               s.capped_passes ? fmt::format("  ({} passes capped)", s.capped_passes) : "");
  }
  return status;
}
