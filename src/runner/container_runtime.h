// SPDX-License-Identifier: Apache-2.0
// The container runtime that runs a container job's steps (docs/containers.md): which one
// (docker or podman, found from config.toml's `[containers]` and the daemon's PATH), and the
// command lines gpuq gives it, built from plain values: `run` (one step, in the foreground under
// the run's shim), `stop` and `kill` (a stop through the runtime), `ps` and `rm` (cleanup by the
// run's label), and the image's presence and pull. Running the commands other than `run` is
// container_commands.h; turning a run's spec into container runs is container_run_spec.h.
//
// What a container sees, and why:
// - Its name is gpuq-RUNID-STEP and its label gpuq.run=RUNID: cleanup finds every container of a
//   run by the label, whatever became of its shim.
// - The job directory at /gpuq/job (also the working directory) and the run directory at
//   /gpuq/run; host paths under them, in the command and in gpuq's variables, are rewritten so.
// - gpuq's variables and the job's own: those naming a path under the two directories, and
//   CUDA_VISIBLE_DEVICES, by value (rewritten); every other one by name only (`--env NAME`),
//   the runtime taking its value from its own environment, which is the run's (the shim starts
//   the runtime with it). A job's values (tokens) so never appear in a command line that every
//   user of the machine can read in /proc. Variables that name the host's own places
//   (kHostOnlyVariables: PATH, HOME, ...) stay out: the image has its own.
// - GPUs by the runtime (docker `--gpus "device=0,1"`, podman CDI `--device nvidia.com/gpu=0`
//   per GPU), so inside they are numbered from 0: CUDA_VISIBLE_DEVICES is set to 0..N-1 (empty
//   without GPUs, as on the host) and TDPRM_GPU0 to 0 (unset without GPUs). Without GPUs NVIDIA_VISIBLE_DEVICES=void, so a runtime whose
//   default hook exposes GPUs (an image with NVIDIA_VISIBLE_DEVICES=all under docker's nvidia
//   runtime) exposes none; a job's own NVIDIA_VISIBLE_DEVICES never passes.
// Pure values and functions, except find_container_runtime (reads the file system); thread-safe.
#pragma once

#include <sys/types.h>

#include <array>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace gpuq::runner {

enum class RuntimeKind { kDocker, kPodman };
std::string_view to_string(RuntimeKind kind);  // "docker" | "podman"

// The runtime the daemon uses. `binary` is an absolute path when found by
// find_container_runtime (a name is looked up in the caller's PATH).
struct ContainerRuntime {
  RuntimeKind kind = RuntimeKind::kDocker;
  std::string binary;
  std::vector<std::string> extra_args;  // [containers] extra_args: after `run`, before gpuq's own
};

// The runtime config.toml names (`configured`: "docker", "podman", or "" for whichever of them
// is on `path` first, docker before podman), found in `path` (a PATH value: directories joined
// by ':'). kNotFound, naming what was looked for and where, when it is not there;
// kInvalidArgument for another name.
Result<ContainerRuntime> find_container_runtime(std::string_view configured,
                                                const std::vector<std::string>& extra_args,
                                                std::string_view path);

// Where the run's two directories are inside every container.
inline constexpr std::string_view kContainerJobDir = "/gpuq/job";
inline constexpr std::string_view kContainerRunDir = "/gpuq/run";

// Variables of the run's environment that name the host's own places or setup, never passed.
inline constexpr std::array<std::string_view, 12> kHostOnlyVariables = {
    "PATH",   "HOME",     "PWD", "OLDPWD",          "SHLVL",      "SHELL",
    "TMPDIR", "HOSTNAME", "_",   "LD_LIBRARY_PATH", "LD_PRELOAD", "XDG_RUNTIME_DIR"};
// Variables the shim sets for each step (runner/shim.cc), after the container's command line is
// written: always passed by name (the runtime skips those its environment lacks).
inline constexpr std::array<std::string_view, 3> kShimStepVariables = {
    "GPUQ_STEP_INDEX", "GPUQ_STEP_COUNT", "GPUQ_STEP_NAME"};

// "gpuq-RUNID-STEP": a run's container for step `step_index` (0 for a job without steps).
std::string container_name(std::string_view run_id, int step_index);
// "gpuq.run=RUNID": the label every container of the run carries (`--label`, `--filter label=`).
std::string container_label(std::string_view run_id);

// `host_path` as a container sees it: under run_dir -> /gpuq/run..., else under job_dir ->
// /gpuq/job...; any other text as it is.
std::string container_path(const std::string& host_path, const std::string& job_dir,
                           const std::string& run_dir);

// One step of a run in a container.
struct ContainerStep {
  std::string image;
  std::string run_id;
  int step_index = 0;
  std::string job_dir;                     // host directory mounted at /gpuq/job
  std::string run_dir;                     // host directory mounted at /gpuq/run
  std::map<std::string, std::string> env;  // the run's environment (runner::build_run_env)
  std::string user;                        // --user ("uid:gid", a name); "": the image's user
  std::vector<int> gpus;                   // host indices of the GPUs the run holds
  std::vector<std::string> argv;           // the command inside (host paths are rewritten)
  // A root daemon's run for another user (docs/lab.md, "Containers"): the runtime runs as root,
  // so it gets nothing of the job's. With `env_file`, the variables passed by name come from the
  // env file the shim gives the runtime on fd kEnvFileFd (`--env-file /dev/fd/3`), never from the
  // runtime's environment; `groups` (the user's) are added with --group-add; `confined` drops
  // every capability and forbids gaining one (`--cap-drop all --security-opt no-new-privileges`:
  // a setuid binary of the image runs as the user).
  bool env_file = false;
  bool confined = false;
  std::vector<gid_t> groups;
};

// The fd on which the shim gives a root runtime a step's env file (ContainerStep::env_file).
inline constexpr int kEnvFileFd = 3;

// The variables container_run_argv passes by name (`--env NAME`, or in the env file): those of
// step.env not passed by value and not the host's own (in name order), then the shim's step
// variables that step.env lacks.
std::vector<std::string> variables_by_name(const ContainerStep& step);

// RUNTIME run --rm EXTRA... --name --label --mount x2 --workdir [--user] [GPUs] --env... IMAGE
// ARGV...
std::vector<std::string> container_run_argv(const ContainerRuntime& runtime,
                                            const ContainerStep& step);
// RUNTIME stop -t SECONDS NAME: SIGTERM, then SIGKILL after `grace_seconds`.
std::vector<std::string> container_stop_argv(const ContainerRuntime& runtime, std::string_view name,
                                             int grace_seconds);
// RUNTIME kill NAME
std::vector<std::string> container_kill_argv(const ContainerRuntime& runtime,
                                             std::string_view name);
// RUNTIME ps -a --no-trunc --filter label=gpuq.run=RUNID --format "{{.ID}} {{.Names}}"
std::vector<std::string> container_ps_argv(const ContainerRuntime& runtime,
                                           std::string_view run_id);
// RUNTIME rm -f ID... (podman: -t 0, or it waits 10 s for a running one to stop)
std::vector<std::string> container_rm_argv(const ContainerRuntime& runtime,
                                           const std::vector<std::string>& ids);
// docker image inspect --format {{.Id}} IMAGE | podman image exists IMAGE
std::vector<std::string> image_present_argv(const ContainerRuntime& runtime,
                                            std::string_view image);
// RUNTIME pull IMAGE
std::vector<std::string> image_pull_argv(const ContainerRuntime& runtime, std::string_view image);

}  // namespace gpuq::runner
