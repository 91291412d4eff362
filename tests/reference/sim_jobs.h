// SPDX-License-Identifier: Apache-2.0
// Reference jobs as gpuq's simulator takes them (src/sim/simulate.h), so that the same trace
// runs through gpuq (sched::schedule on sim's clock) and through easy_reference.h. Named
// j1, j2, ... in input order, as in wide_trace_csv. Header-only; pure; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "easy_reference.h"
#include "sim/simulate.h"

namespace gpuq::reference {

inline std::vector<sim::SimJob> to_sim_jobs(const std::vector<RefJob>& jobs) {
  std::vector<sim::SimJob> out;
  out.reserve(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    sim::SimJob job;
    job.name = "j" + std::to_string(i + 1);
    job.gpus = jobs[i].gpus;
    job.submit_ms = jobs[i].submit_ms;
    job.duration_ms = jobs[i].runtime_ms;
    job.estimate_ms = jobs[i].estimate_ms;
    out.push_back(std::move(job));
  }
  return out;
}

}  // namespace gpuq::reference
