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
//        sim_bench --phases PLAN.json [--config FILE] [--gpus G] [--rounds R]
//                  times each phase of `gpuq simulate PLAN.json --gpus G --config FILE` (the
//                  machine: G GPUs, default 8, and the lanes of FILE) in this process:
//                  reading and checking the plan, its specs into simulator jobs, the
//                  simulation, the table printed, and freeing the plan; median of R rounds
// Timings are for comparison between builds on one machine, not assertions.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/duration.h"
#include "cli/simulate_plan.h"
#include "config/config.h"
#include "sim/report.h"
#include "sim/simulate.h"
#include "sim/testing/plan_generator.h"
#include "spec/plan.h"

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

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0.0 : values[values.size() / 2];
}

// `gpuq simulate PLAN --gpus G`'s phases, in the order the command runs them (cli/cmd_simulate).
int time_phases(const std::string& plan_path, const std::string& config_path, int gpus,
                int rounds) {
  using Clock = std::chrono::steady_clock;
  std::vector<std::vector<double>> ms(5);
  auto lap = [](Clock::time_point& since) {
    auto now = Clock::now();
    double elapsed = std::chrono::duration<double, std::milli>(now - since).count();
    since = now;
    return elapsed;
  };
  size_t job_count = 0;
  gpuq::sim::SimStats stats;
  gpuq::config::Config config;
  auto fail = [](const gpuq::Error& error) {
    std::fprintf(stderr, "%s\n", error.message.c_str());
    return 1;
  };
  if (!config_path.empty()) {
    auto loaded = gpuq::config::load_config(config_path, gpuq::config::IfMissing::kError);
    if (!loaded) return fail(loaded.error());
    config = std::move(*loaded);
  }
  gpuq::spec::PlanContext context{"/", {}};
  context.keep_request = false;  // as `gpuq simulate` reads it
  for (int round = 0; round < rounds; ++round) {
    auto since = Clock::now();
    auto plan = std::make_unique<gpuq::Result<gpuq::spec::Plan>>(
        gpuq::spec::load_plan(plan_path, context));
    if (!*plan) return fail((*plan).error());
    ms[0].push_back(lap(since));
    auto simulation = gpuq::cli::plan_simulation(**plan, gpus, config);
    if (!simulation) return fail(simulation.error());
    job_count = simulation->jobs.size();
    ms[1].push_back(lap(since));
    auto result = gpuq::sim::simulate(simulation->jobs, simulation->machine, gpuq::sched::Policy::kBackfill);
    if (!result) return fail(result.error());
    stats = result->stats;
    ms[2].push_back(lap(since));
    std::string table = gpuq::sim::format_result_table(*result, true);
    ms[3].push_back(lap(since));
    plan.reset();
    ms[4].push_back(lap(since));
  }
  const char* names[] = {"read and check the plan", "specs into simulator jobs", "simulate",
                         "format the table", "free the plan"};
  fmt::print("{}: {} jobs on {} GPUs, median of {} rounds\n", plan_path, job_count, gpus, rounds);
  double total = 0;
  for (size_t i = 0; i < ms.size(); ++i) {
    double m = median(ms[i]);
    total += m;
    fmt::print("  {:<26} {:>8.2f} ms\n", names[i], m);
  }
  fmt::print("  {:<26} {:>8.2f} ms\n", "sum of medians", total);
  fmt::print("  (the simulation: {} events, {} passes of {:.1f} jobs on average, {} completed)\n",
             stats.events, stats.passes,
             stats.passes ? static_cast<double>(stats.jobs_passed) / static_cast<double>(stats.passes)
                          : 0.0,
             stats.completed_passes);
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
  int count = 100000, gpus = -1;  // --gpus; 64 for a generated queue, 8 for --phases
  uint32_t seed = 1;
  std::string only = "all";
  std::string plan_dir, phases_plan, phases_config;
  int rounds = 9;
  size_t max_window = 0;
  gpuq::sim::SimOptions options;
  CLI::App app{"the simulator's wall time on a generated queue, or each phase of gpuq simulate"};
  app.add_option("--jobs", count, "jobs to generate")->check(CLI::PositiveNumber);
  app.add_option("--gpus", gpus, "GPUs of the machine (default 64; 8 with --phases)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", seed, "the generator's seed");
  app.add_option("--policy", only, "fifo, priority, backfill or all")
      ->check(CLI::IsMember({"fifo", "priority", "backfill", "all"}));
  app.add_option("--max-window", max_window, "an approximation: see SimOptions::max_window");
  app.add_flag("--full-queue", options.full_queue, "no window: every pass sees the whole queue");
  app.add_option("--write-plan", plan_dir, "write a generated plan, its scripts, config.toml and "
                 "a trace into this directory")->check(CLI::ExistingDirectory);
  app.add_option("--phases", phases_plan, "time each phase of gpuq simulate on this plan")
      ->check(CLI::ExistingFile);
  app.add_option("--config", phases_config, "with --phases: the config.toml whose lanes the "
                 "machine has")->check(CLI::ExistingFile);
  app.add_option("--rounds", rounds, "with --phases: rounds, of which the median is shown")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  if (!plan_dir.empty()) return write_plan(plan_dir, count, seed);
  if (!phases_plan.empty()) return time_phases(phases_plan, phases_config, gpus < 0 ? 8 : gpus, rounds);
  if (gpus < 0) gpus = 64;
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
