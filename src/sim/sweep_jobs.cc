// SPDX-License-Identifier: Apache-2.0
#include "sim/sweep_jobs.h"

#include <fmt/format.h>

#include <map>

namespace gpuq::sim {
namespace {

// `names` with each array's name replaced by its elements' names.
void expand_dependencies(std::vector<std::string>& names,
                         const std::map<std::string, std::vector<std::string>>& elements) {
  std::vector<std::string> expanded;
  expanded.reserve(names.size());
  for (auto& name : names) {
    auto array = elements.find(name);
    if (array == elements.end()) {
      expanded.push_back(std::move(name));
    } else {
      expanded.insert(expanded.end(), array->second.begin(), array->second.end());
    }
  }
  names = std::move(expanded);
}

}  // namespace

Result<std::vector<SimJob>> expand_sweeps(std::vector<SimJob> jobs,
                                          const std::vector<std::optional<spec::Sweep>>& sweeps,
                                          SimMachine& machine) {
  if (!sweeps.empty() && sweeps.size() != jobs.size()) {
    return fail(Code::kInvalidArgument,
                fmt::format("{} sweeps for {} jobs: give one per job", sweeps.size(), jobs.size()));
  }
  std::map<std::string, std::vector<std::string>> elements;  // array name -> element names
  std::vector<SimJob> out;
  out.reserve(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (sweeps.empty() || !sweeps[i]) {
      out.push_back(std::move(jobs[i]));
      continue;
    }
    const spec::Sweep& sweep = *sweeps[i];
    const SimJob& base = jobs[i];
    std::vector<std::string>& names = elements[base.name];
    if (sweep.max_running > 0) {
      std::string lane = fmt::format("{}%{}", base.name, sweep.max_running);
      machine.lanes.push_back(sched::Lane{lane, sweep.max_running, 0, {}});
      jobs[i].lanes.push_back(std::move(lane));
    }
    for (const auto& element : spec::sweep_elements(sweep)) {
      SimJob job = base;
      job.name = base.name + element.suffix();
      names.push_back(job.name);
      out.push_back(std::move(job));
    }
  }
  if (elements.empty()) return out;
  for (SimJob& job : out) {
    expand_dependencies(job.after, elements);
    expand_dependencies(job.after_any, elements);
  }
  return out;
}

}  // namespace gpuq::sim
