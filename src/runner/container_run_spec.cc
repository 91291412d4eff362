// SPDX-License-Identifier: Apache-2.0
#include "runner/container_run_spec.h"

#include <fmt/format.h>

namespace gpuq::runner {

std::string step_image(const JobSpec& job, int index) {
  if (index >= 0 && static_cast<size_t>(index) < job.steps.size()) {
    const std::string& own = job.steps[static_cast<size_t>(index)].image;
    if (!own.empty()) return own;
  }
  return job.image;
}

bool runs_in_containers(const JobSpec& job) {
  if (!job.image.empty()) return true;
  for (const JobStep& step : job.steps) {
    if (!step.image.empty()) return true;
  }
  return false;
}

std::string container_user_arg(const JobSpec& job, uid_t uid, gid_t gid) {
  if (!job.container_user.empty()) return job.container_user;
  return fmt::format("{}:{}", uid, gid);
}

std::vector<int> held_gpu_indices(const RunContext& context) {
  std::vector<int> gpus;
  for (const Resource* r : context.held) {
    if (r != nullptr && r->index) gpus.push_back(*r->index);
  }
  return gpus;
}

Status containerize_run_spec(RunSpec& spec, const JobSpec& job, const RunContext& context,
                             const ContainerRuntime& runtime, const std::string& user) {
  if (spec.steps.size() != job.steps.size()) {
    return fail(Code::kInternal, fmt::format("the run has {} steps, its job {}", spec.steps.size(),
                                             job.steps.size()));
  }
  ContainerStep step;
  step.run_id = context.run_id;
  step.job_dir = context.job_dir;
  step.run_dir = context.run_dir;
  step.env = spec.env;
  step.user = user;
  step.gpus = held_gpu_indices(context);
  // A root daemon's run for another user: the runtime runs as root, the container as the user.
  if (spec.run_as) {
    spec.root_runtime.emplace();
    step.env_file = true;
    if (job.container_user.empty()) {
      step.confined = true;
      step.groups = spec.run_as->groups;
    }
  }
  auto in_container = [&](int index, std::vector<std::string>& argv) {
    step.image = step_image(job, index);
    if (step.image.empty()) return;
    step.step_index = index;
    step.argv = std::move(argv);
    argv = container_run_argv(runtime, step);
    if (spec.root_runtime) {
      spec.root_runtime->steps.push_back(index);
      spec.root_runtime->env_file = variables_by_name(step);
    }
  };
  if (job.steps.empty()) {
    in_container(0, spec.argv);
    return ok();
  }
  for (size_t i = 0; i < spec.steps.size(); ++i)
    in_container(static_cast<int>(i), spec.steps[i].argv);
  return ok();
}

}  // namespace gpuq::runner
