// SPDX-License-Identifier: Apache-2.0
#include "cli/simulate_plan.h"

#include "sim/plan_jobs.h"
#include "sim/sweep_jobs.h"

namespace gpuq::cli {

sim::SimMachine simulation_machine(int gpus, const config::Config& config) {
  sim::SimMachine machine;
  machine.gpus = gpus;
  for (const auto& lane : config.lanes) {
    machine.lanes.push_back(sched::Lane{lane.name, lane.capacity, 0, lane.excludes});
  }
  machine.backfill_unknown_limit_ms = config.backfill_unknown_limit_ms;
  return machine;
}

Result<PlanSimulation> plan_simulation(spec::Plan& plan, int gpus, const config::Config& config) {
  PlanSimulation out;
  out.machine = simulation_machine(gpus, config);
  auto bases = sim::jobs_from_specs(plan.specs);
  if (!bases) return tl::unexpected(bases.error());
  for (size_t i = 0; i < plan.simulation.size() && i < bases->size(); ++i) {
    spec::SimulationHints& hints = plan.simulation[i];
    (*bases)[i].produced_by = std::move(hints.produced_by);
    (*bases)[i].produced_at_frac = hints.produced_at_frac;
    (*bases)[i].first_look_frac = hints.first_look_frac.value_or(-1);
  }
  // Job arrays run as their elements, a capped one's on a lane of its own (sim/sweep_jobs.h).
  auto jobs = sim::expand_sweeps(std::move(*bases), plan.sweeps, out.machine);
  if (!jobs) return tl::unexpected(jobs.error());
  out.jobs = std::move(*jobs);
  for (auto& reservation : plan.reservations) {
    out.machine.reservations.push_back(
        sched::Reservation{std::move(reservation.name), std::move(reservation.gpus)});
  }
  return out;
}

}  // namespace gpuq::cli
