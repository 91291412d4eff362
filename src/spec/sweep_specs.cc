// SPDX-License-Identifier: Apache-2.0
#include "spec/sweep_specs.h"

namespace gpuq::spec {

namespace {

// A step's name, command, script arguments and done-if test, as a job's arguments are.
void substitute_step(JobStep& step, const SweepElement& element) {
  step.name = substitute_element(step.name, element);
  for (auto& arg : step.argv) arg = substitute_element(arg, element);
  for (auto& arg : step.script_args) arg = substitute_element(arg, element);
  step.done_if = substitute_element(step.done_if, element);
}

}  // namespace

JobSpec element_spec(const JobSpec& base, const std::string& name, const SweepElement& element) {
  JobSpec s = base;
  s.name = name + element.suffix();
  for (auto& arg : s.argv) arg = substitute_element(arg, element);
  for (auto& arg : s.script_args) arg = substitute_element(arg, element);
  for (auto& step : s.steps) substitute_step(step, element);
  for (auto& [key, value] : element_variables(element)) s.env[key] = value;
  return s;
}

std::vector<JobSpec> element_specs(const JobSpec& base, const std::string& name,
                                   const Sweep& sweep) {
  std::vector<JobSpec> specs;
  specs.reserve(sweep.size());
  for (const auto& element : sweep_elements(sweep)) specs.push_back(element_spec(base, name, element));
  return specs;
}

}  // namespace gpuq::spec
