// SPDX-License-Identifier: Apache-2.0
// How a simulation's result is shown: a table for people and JSON for scripts. The JSON keys
// are a contract (`gpuq simulate --json`, docs/scheduling.md):
//   {"makespan_s", "utilization" (0..1), "mean_wait_s", "p95_wait_s",
//    "jobs": [{"name", "start_s", "end_s", "gpus": [slots], "first_look_s"?}]}
// ("first_look_s" for a job with a first_look_frac) with times in seconds from the simulation's time 0; `jobs` is left out when with_jobs is
// false (a trace replay of many jobs). Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/simulate.h"

namespace gpuq::sim {

// One line per job (name, start, end, first look when any job has one, GPUs) when with_jobs, in start order, then the summary:
// makespan, utilization in percent, mean and p95 wait.
std::string format_result_table(const SimResult& result, bool with_jobs);

nlohmann::json result_to_json(const SimResult& result, bool with_jobs);

}  // namespace gpuq::sim
