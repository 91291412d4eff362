// SPDX-License-Identifier: Apache-2.0
// What the daemon asks of the container runtime for one run or one job (docs/containers.md),
// built on container_commands.h: stopping every container of a run, cleaning them up within the
// cleanup limit, and making a job's images present (checked, pulled as its policy says).
// Thread rules: each call blocks until its commands end or time out, so the daemon calls them
// off its actor thread; any number may run at once.
#pragma once

#include <string>
#include <vector>

#include "base/duration.h"
#include "base/status.h"
#include "model/job.h"
#include "runner/container_commands.h"
#include "runner/container_runtime.h"

namespace gpuq::runner {

// Stops every container labelled with run `run_id` (stop -t GRACE, then kill): a cancel, a
// timeout or a preemption of a container job. The runtime's client under the shim forwards
// SIGTERM, but a client killed first leaves its container running; this reaches it by name.
// OK when none is left running; else the runtime's message (cleanup confirms later).
Status stop_run_containers(const ContainerRuntime& runtime, const std::string& run_id, Millis grace);

// Cleanup by label (cleanup_run_containers) repeated `poll` apart until nothing is listed or
// `limit` has passed since the call: a runtime may still be removing an --rm container that just
// exited. A runtime that cannot list them counts as not confirmed, with its message.
ContainerCleanup cleanup_run_containers_within(const ContainerRuntime& runtime,
                                               const std::string& run_id, Millis limit,
                                               Millis poll);

// The distinct images a job's steps (or its command) run in, in step order.
std::vector<std::string> job_images(const JobSpec& job);

// Which of `images` must be pulled under `policy`: all of them (kAlways), those the runtime does
// not have (kMissing); kNever wants none and fails, naming the image and the fix, when one is
// absent. The runtime's message when it cannot tell.
Result<std::vector<std::string>> images_to_pull(const ContainerRuntime& runtime,
                                                const std::vector<std::string>& images,
                                                PullPolicy policy);

// How long one pull may take before it is ended.
inline constexpr Millis kPullTimeout{4 * 3'600'000};

// Pulls `images` one after another, their progress appended to the file open at `log_fd` (-1:
// none); the first failure ends it with the runtime's message. `cancel_fd` readable (-1: none)
// ends a pull at once.
Status pull_images(const ContainerRuntime& runtime, const std::vector<std::string>& images,
                   int log_fd, int cancel_fd = -1);

}  // namespace gpuq::runner
