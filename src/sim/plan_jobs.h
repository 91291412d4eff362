// SPDX-License-Identifier: Apache-2.0
// Turns a plan request — the body of POST /v1/plans (docs/api.md, "Scheduling (v1
// additions)"): {"jobs": [submit request with "name"], "reservations": [{"name", "gpus",
// "jobs"}]} — into simulator input. Each job is validated with model/spec_json's
// spec_from_json (the daemon's own rules), with two allowances for plans written for
// simulation: a job may leave out argv/script/steps, and may give `est_hours` (a number). A job
// with steps or a container image is simulated as any other, for its whole estimate.
// A plan says nothing about true run times, so each job runs for exactly its estimate, and a
// job without one is an error. Every job is submitted at time 0 in the plan's order.
// afterok/afterany dependencies are kept (every simulated job succeeds; a dependency on a job
// outside the plan counts as met); `file` and `requires` conditions count as met; an
// afternotok dependency is an error (it would never be met). hold, not_before and timeout
// are ignored. jobs_from_specs does the same from specs a caller already holds (spec::Plan's,
// validated by spec_from_json and given their reservation), reading no JSON. Pure functions;
// thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "base/status.h"
#include "model/job.h"
#include "sched/scheduler.h"
#include "sim/simulate.h"

namespace gpuq::sim {

Result<std::vector<SimJob>> jobs_from_plan(const nlohmann::json& plan_request);

// One job from its spec (named by spec.name, its reservation spec.reservation), and a list.
Result<SimJob> job_from_spec(const JobSpec& spec);
Result<std::vector<SimJob>> jobs_from_specs(const std::vector<JobSpec>& specs);

// The plan's reservations (name and GPU indices), for SimMachine::reservations.
Result<std::vector<sched::Reservation>> reservations_from_plan(const nlohmann::json& plan_request);

}  // namespace gpuq::sim
