// SPDX-License-Identifier: Apache-2.0
// Schedule quality on wide multi-GPU jobs: mean wait and utilisation of gpuq's
// `fifo` and `backfill` policies (sched::schedule through the simulator) against the reference
// FIFO and EASY backfill (tests/reference/easy_reference.h, independent of sched and sim), on
// generated traces (tests/reference/wide_trace.h: 4-32 GPUs on 256, heavy-tailed runtimes,
// estimates = runtime rounded up to a power of two minutes, load near saturation), and on a
// trace file given with --trace FILE (id,submit_s,gpus,duration_s[,...],est_s; see
// src/sim/trace.h). --seeds N: how many generated traces (default 5); --jobs N: jobs each
// (3,000); --load X: offered load (0.97); --write-trace FILE: write the trace of --seed N
// (default 1) as CSV and exit (for `gpuq simulate --trace`); --reservations N: gpuq's
// max_reservations (default the scheduler's). Prints one row per trace and policy.
#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "easy_reference.h"
#include "sim/simulate.h"
#include "sim/trace.h"
#include "sim_jobs.h"
#include "wide_trace.h"

namespace {

using namespace gpuq;
using reference::RefJob;
using reference::RefPolicy;

int max_reservations = sched::Snapshot().max_reservations;

struct Row {
  double mean_wait_s = 0;
  double utilization = 0;
};

void report(const std::string& name, const std::vector<RefJob>& jobs, int gpus) {
  sim::SimMachine machine;
  machine.gpus = gpus;
  machine.max_reservations = max_reservations;
  const std::vector<sim::SimJob> sim_jobs = reference::to_sim_jobs(jobs);
  auto gpuq_run = [&](sched::Policy policy) {
    auto result = sim::simulate(sim_jobs, machine, policy);
    if (!result) {
      fmt::print(stderr, "{}: {}\n", name, result.error().message);
      std::exit(1);
    }
    return Row{result->mean_wait_s, result->utilization};
  };
  auto ref_run = [&](RefPolicy policy) {
    reference::RefResult r = reference::simulate_reference(jobs, gpus, policy);
    return Row{r.mean_wait_s, r.utilization};
  };
  const Row fifo = gpuq_run(sched::Policy::kFifo);
  const Row backfill = gpuq_run(sched::Policy::kBackfill);
  const Row ref_fifo = ref_run(RefPolicy::kFifo);
  const Row easy = ref_run(RefPolicy::kEasy);
  auto line = [&](const char* policy, const Row& row) {
    fmt::print("{:<14} {:<18} {:>12.0f} {:>9.1f}% {:>8.4f}\n", name, policy, row.mean_wait_s,
               100.0 * (1.0 - row.mean_wait_s / fifo.mean_wait_s), row.utilization);
  };
  line("gpuq fifo", fifo);
  line("reference fifo", ref_fifo);
  line("gpuq backfill", backfill);
  line("reference easy", easy);
  fmt::print("{:<14} gpuq backfill / easy mean wait: {:.3f}\n\n", name,
             backfill.mean_wait_s / easy.mean_wait_s);
}

}  // namespace

int main(int argc, char** argv) {
  int seeds = 5;
  reference::WideTraceOptions options;
  std::string trace, write_trace;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--seeds")
      seeds = std::atoi(value.c_str());
    else if (flag == "--jobs")
      options.jobs = std::atoi(value.c_str());
    else if (flag == "--load")
      options.load = std::atof(value.c_str());
    else if (flag == "--trace")
      trace = value;
    else if (flag == "--seed")
      options.seed = std::strtoull(value.c_str(), nullptr, 10);
    else if (flag == "--reservations")
      max_reservations = std::atoi(value.c_str());
    else if (flag == "--write-trace")
      write_trace = value;
    else {
      fmt::print(stderr, "unknown flag {}\n", flag);
      return 2;
    }
  }
  if (!write_trace.empty()) {
    std::ofstream(write_trace) << reference::wide_trace_csv(
        reference::generate_wide_trace(options));
    return 0;
  }
  fmt::print("{:<14} {:<18} {:>12} {:>10} {:>8}\n", "trace", "policy", "mean wait s", "vs fifo",
             "util");
  if (!trace.empty()) {
    auto jobs = sim::read_trace_csv(trace);
    if (!jobs) {
      fmt::print(stderr, "{}\n", jobs.error().message);
      return 1;
    }
    std::vector<RefJob> ref;
    for (const sim::SimJob& j : *jobs)
      ref.push_back({j.submit_ms, j.gpus, j.duration_ms, j.estimate_ms});
    report("file", ref, options.gpus);
    return 0;
  }
  for (int seed = 1; seed <= seeds; ++seed) {
    options.seed = static_cast<uint64_t>(seed);
    report(fmt::format("wide seed {}", seed), reference::generate_wide_trace(options),
           options.gpus);
  }
  return 0;
}
