// SPDX-License-Identifier: Apache-2.0
// A run's spec made to run its container steps (docs/containers.md): for the daemon, which
// builds a run's spec as for the host (runner::run_argv, build_run_env, the steps) and then
// hands it here, so each step that has an image (its own, else the job's) becomes `RUNTIME run`
// of its command (container_runtime.h), under the same shim, stop and cleanup as any step.
// Done and undone nowhere else. Pure functions; thread-safe.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/status.h"
#include "model/job.h"
#include "runner/container_runtime.h"
#include "runner/run_env.h"
#include "runner/run_files.h"

namespace gpuq::runner {

// The image step `index` of `job` runs in: the step's own, else the job's; "" runs on the host.
// A job without steps has index 0 (its one command).
std::string step_image(const JobSpec& job, int index);

// Whether any of the job's steps (or its command) runs in a container: the daemon then needs a
// runtime, pulls images before GPUs are taken and cleans up by label after the run.
bool runs_in_containers(const JobSpec& job);

// The containers' --user: the job's container_user when it has one, else the submitter's
// "uid:gid" (the daemon resolves JobSpec::user, or takes its own in personal mode).
std::string container_user_arg(const JobSpec& job, uid_t uid, gid_t gid);

// The host GPU indices `context` holds (resources without an index are no device).
std::vector<int> held_gpu_indices(const RunContext& context);

// Rewrites `spec` (argv, or steps parallel to job.steps) so each step with an image runs in it:
// its argv becomes container_run_argv with the run's directories, its environment (spec.env,
// which the shim still gives the runtime: variables pass by name), `user` and the GPUs the
// context holds. Steps without an image are left as they are. kInternal when spec.steps does
// not match job.steps.
// With spec.run_as (a root daemon's run for another user) the runtime runs as root: those
// steps are listed in spec.root_runtime with the variables their env file carries; the
// containers get spec.run_as->groups and, without a container_user, no capability.
Status containerize_run_spec(RunSpec& spec, const JobSpec& job, const RunContext& context,
                             const ContainerRuntime& runtime, const std::string& user);

}  // namespace gpuq::runner
