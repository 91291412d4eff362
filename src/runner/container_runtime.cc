// SPDX-License-Identifier: Apache-2.0
#include "runner/container_runtime.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace gpuq::runner {
namespace {

// An executable regular file named `name` in one of `path`'s directories; "" when none.
std::string find_in_path(std::string_view name, std::string_view path) {
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view dir = path.substr(start, end - start);
    start = end + 1;
    if (dir.empty() || dir.front() != '/')
      continue;  // a relative entry would follow the daemon's cwd
    std::string candidate = fmt::format("{}/{}", dir, name);
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return "";
}

bool under(const std::string& path, const std::string& dir) {
  if (dir.empty() || path.compare(0, dir.size(), dir) != 0) return false;
  return path.size() == dir.size() || path[dir.size()] == '/';
}

template <size_t N>
bool listed(const std::array<std::string_view, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string numbered_from_zero(size_t count) {
  std::string out;
  for (size_t i = 0; i < count; ++i) out += (i == 0 ? "" : ",") + std::to_string(i);
  return out;
}

void add_gpu_flags(const ContainerRuntime& runtime, const std::vector<int>& gpus,
                   std::vector<std::string>& argv) {
  if (gpus.empty()) return;
  if (runtime.kind == RuntimeKind::kDocker) {
    // The quotes are part of the value: docker reads it as CSV, where a bare "device=0,1" would
    // be two fields.
    std::string ids;
    for (int gpu : gpus) ids += (ids.empty() ? "" : ",") + std::to_string(gpu);
    argv.insert(argv.end(), {"--gpus", fmt::format("\"device={}\"", ids)});
    return;
  }
  for (int gpu : gpus) argv.insert(argv.end(), {"--device", fmt::format("nvidia.com/gpu={}", gpu)});
}

// Whether a variable of the run's environment stays out of every container.
bool host_only(const std::string& name) {
  return listed(kHostOnlyVariables, name) || name == "NVIDIA_VISIBLE_DEVICES" ||
         name == "CUDA_VISIBLE_DEVICES" || name == "TDPRM_GPU0";
}

// Whether it is passed by value: a path under the run's directories, rewritten.
bool by_value(const ContainerStep& step, const std::string& value) {
  return under(value, step.job_dir) || under(value, step.run_dir);
}

void add_env_flags(const ContainerStep& step, std::vector<std::string>& argv) {
  for (const auto& [name, value] : step.env) {
    if (host_only(name)) continue;
    if (by_value(step, value)) {
      argv.insert(argv.end(),
                  {"--env", name + "=" + container_path(value, step.job_dir, step.run_dir)});
    } else if (!step.env_file) {
      argv.insert(argv.end(), {"--env", name});
    }
  }
  for (std::string_view name : kShimStepVariables) {
    if (!step.env_file && !step.env.count(std::string(name))) argv.insert(argv.end(), {"--env", std::string(name)});
  }
  if (step.env_file) argv.insert(argv.end(), {"--env-file", fmt::format("/dev/fd/{}", kEnvFileFd)});
  argv.insert(argv.end(),
              {"--env", "CUDA_VISIBLE_DEVICES=" + numbered_from_zero(step.gpus.size())});
  if (!step.gpus.empty()) argv.insert(argv.end(), {"--env", "TDPRM_GPU0=0"});
  if (step.gpus.empty()) argv.insert(argv.end(), {"--env", "NVIDIA_VISIBLE_DEVICES=void"});
}

}  // namespace

std::vector<std::string> variables_by_name(const ContainerStep& step) {
  std::vector<std::string> names;
  for (const auto& [name, value] : step.env) {
    if (!host_only(name) && !by_value(step, value)) names.push_back(name);
  }
  for (std::string_view name : kShimStepVariables) {
    if (!step.env.count(std::string(name))) names.emplace_back(name);
  }
  return names;
}

std::string_view to_string(RuntimeKind kind) {
  return kind == RuntimeKind::kDocker ? "docker" : "podman";
}

Result<ContainerRuntime> find_container_runtime(std::string_view configured,
                                                const std::vector<std::string>& extra_args,
                                                std::string_view path) {
  std::vector<RuntimeKind> candidates;
  if (configured.empty()) {
    candidates = {RuntimeKind::kDocker, RuntimeKind::kPodman};
  } else if (configured == "docker") {
    candidates = {RuntimeKind::kDocker};
  } else if (configured == "podman") {
    candidates = {RuntimeKind::kPodman};
  } else {
    return fail(Code::kInvalidArgument,
                fmt::format("[containers] runtime = \"{}\": gpuq runs \"docker\" or \"podman\"",
                            configured));
  }
  for (RuntimeKind kind : candidates) {
    std::string binary = find_in_path(to_string(kind), path);
    if (!binary.empty()) return ContainerRuntime{kind, std::move(binary), extra_args};
  }
  if (configured.empty()) {
    return fail(
        Code::kNotFound,
        fmt::format("no container runtime: neither docker nor podman is on the daemon's PATH ({}); "
                    "install one, or put its directory on the daemon's PATH",
                    path));
  }
  return fail(
      Code::kNotFound,
      fmt::format(
          "[containers] runtime = \"{}\", but {} is not on the daemon's PATH ({}); install it, "
          "or put its directory on the daemon's PATH",
          configured, configured, path));
}

std::string container_name(std::string_view run_id, int step_index) {
  return fmt::format("gpuq-{}-{}", run_id, step_index);
}

std::string container_label(std::string_view run_id) { return fmt::format("gpuq.run={}", run_id); }

std::string container_path(const std::string& host_path, const std::string& job_dir,
                           const std::string& run_dir) {
  // The run directory first: it lies inside the job directory.
  if (under(host_path, run_dir))
    return std::string(kContainerRunDir) + host_path.substr(run_dir.size());
  if (under(host_path, job_dir))
    return std::string(kContainerJobDir) + host_path.substr(job_dir.size());
  return host_path;
}

std::vector<std::string> container_run_argv(const ContainerRuntime& runtime,
                                            const ContainerStep& step) {
  std::vector<std::string> argv = {runtime.binary, "run"};
  argv.insert(argv.end(), runtime.extra_args.begin(), runtime.extra_args.end());
  argv.insert(
      argv.end(),
      // --pull=never: the daemon made the image present before the run took its GPUs; a run
      // never pulls while they wait (a removed image fails the step instead).
      {"--rm", "--pull=never", "--name", container_name(step.run_id, step.step_index), "--label",
       container_label(step.run_id), "--mount",
       fmt::format("type=bind,source={},target={}", step.job_dir, kContainerJobDir), "--mount",
       fmt::format("type=bind,source={},target={}", step.run_dir, kContainerRunDir), "--workdir",
       std::string(kContainerJobDir)});
  if (!step.user.empty()) argv.insert(argv.end(), {"--user", step.user});
  for (gid_t group : step.groups) argv.insert(argv.end(), {"--group-add", std::to_string(group)});
  if (step.confined) {
    argv.insert(argv.end(), {"--cap-drop", "all", "--security-opt", "no-new-privileges"});
  }
  add_gpu_flags(runtime, step.gpus, argv);
  add_env_flags(step, argv);
  argv.push_back(step.image);
  for (const std::string& arg : step.argv)
    argv.push_back(container_path(arg, step.job_dir, step.run_dir));
  return argv;
}

std::vector<std::string> container_stop_argv(const ContainerRuntime& runtime, std::string_view name,
                                             int grace_seconds) {
  return {runtime.binary, "stop", "-t", std::to_string(std::max(grace_seconds, 0)),
          std::string(name)};
}

std::vector<std::string> container_kill_argv(const ContainerRuntime& runtime,
                                             std::string_view name) {
  return {runtime.binary, "kill", std::string(name)};
}

std::vector<std::string> container_ps_argv(const ContainerRuntime& runtime,
                                           std::string_view run_id) {
  return {runtime.binary, "ps",
          "-a",           "--no-trunc",
          "--filter",     "label=" + container_label(run_id),
          "--format",     "{{.ID}} {{.Names}}"};
}

std::vector<std::string> container_rm_argv(const ContainerRuntime& runtime,
                                           const std::vector<std::string>& ids) {
  std::vector<std::string> argv = {runtime.binary, "rm", "-f"};
  if (runtime.kind == RuntimeKind::kPodman) argv.insert(argv.end(), {"-t", "0"});
  argv.insert(argv.end(), ids.begin(), ids.end());
  return argv;
}

std::vector<std::string> image_present_argv(const ContainerRuntime& runtime,
                                            std::string_view image) {
  if (runtime.kind == RuntimeKind::kPodman)
    return {runtime.binary, "image", "exists", std::string(image)};
  return {runtime.binary, "image", "inspect", "--format", "{{.Id}}", std::string(image)};
}

std::vector<std::string> image_pull_argv(const ContainerRuntime& runtime, std::string_view image) {
  return {runtime.binary, "pull", std::string(image)};
}

}  // namespace gpuq::runner
