// SPDX-License-Identifier: Apache-2.0
// What `gpuq simulate PLAN --gpus N` simulates, made from the plan it has read: the plan's jobs
// as simulator jobs, with what the plan says for the simulator alone (spec::SimulationHints:
// the job that writes a job's input and when, a job's first look), an array as its elements, a capped one's on a lane of its own) and the
// machine (N GPUs, config.toml's lanes and backfill setting, the plan's reservations). Shared
// by the command (cmd_simulate.cc) and bench/sim_bench --phases, which times exactly this.
// Pure functions; thread-safe.
#pragma once

#include <vector>

#include "base/status.h"
#include "config/config.h"
#include "sim/simulate.h"
#include "spec/plan.h"

namespace gpuq::cli {

// The machine of `gpus` GPUs with config.toml's lanes and backfill setting.
sim::SimMachine simulation_machine(int gpus, const config::Config& config);

struct PlanSimulation {
  std::vector<sim::SimJob> jobs;
  sim::SimMachine machine;
};

// The plan's reservations are moved out of it into the machine.
Result<PlanSimulation> plan_simulation(spec::Plan& plan, int gpus, const config::Config& config);

}  // namespace gpuq::cli
