// SPDX-License-Identifier: Apache-2.0
// Running the container runtime's commands other than `run` (which the run's shim runs in the
// foreground): stopping a step's container, cleaning up a run's containers by its label, and an
// image's presence and pull (docs/containers.md). Each is a short external command run with
// os::run_command (its own process group, a hard timeout, output captured), whose failure comes
// back as the runtime's own message. Nothing here is kept between calls.
// Thread rules: each call blocks until its commands end or time out, so the daemon calls them
// off its actor thread; any number may run at once (os/command.h's rules apply).
#pragma once

#include <string>
#include <vector>

#include "base/duration.h"
#include "base/status.h"
#include "runner/container_runtime.h"

namespace gpuq::runner {

// How long one runtime command (ps, rm, kill, image presence) may take before it is killed.
inline constexpr Millis kRuntimeCommandTimeout{60'000};

// Stops the container `name` through the runtime: `stop -t GRACE` (SIGTERM to its processes,
// SIGKILL after `grace`, rounded up to whole seconds), then `kill` when stop failed or did not
// end within grace + `timeout`. OK when the container has stopped or was not there (gone
// already: --rm removed it); otherwise an error with the runtime's message.
Status stop_container(const ContainerRuntime& runtime, const std::string& name, Millis grace,
                      Millis timeout = kRuntimeCommandTimeout);

// A container as `ps` lists it.
struct ContainerRef {
  std::string id;
  std::string name;
  bool operator==(const ContainerRef&) const = default;
};

// The containers, running or not, labelled with run `run_id`.
Result<std::vector<ContainerRef>> list_run_containers(const ContainerRuntime& runtime,
                                                      const std::string& run_id,
                                                      Millis timeout = kRuntimeCommandTimeout);

// What cleanup by label found. `left` are those still listed after `rm -f`: the daemon cannot
// count the run's GPUs as free while they last (`message` is the runtime's word on them).
struct ContainerCleanup {
  std::vector<ContainerRef> removed;
  std::vector<ContainerRef> left;
  std::string message;
  bool confirmed() const { return left.empty(); }
};

// Confirms that no container of run `run_id` is left: lists them by label, removes what it finds
// (`rm -f`) and lists again. An error when the runtime cannot list them (it is not running, say):
// then nothing is confirmed. One pass: a container the runtime is removing at that moment (docker
// removing an --rm container that just exited) may still be listed, so a caller calls again,
// within `[cleanup] limit`, before it counts what is left.
Result<ContainerCleanup> cleanup_run_containers(const ContainerRuntime& runtime,
                                                const std::string& run_id,
                                                Millis timeout = kRuntimeCommandTimeout);

// Whether the runtime has `image` locally. An error (with the runtime's message) when it cannot
// tell, e.g. docker without its daemon.
Result<bool> image_present(const ContainerRuntime& runtime, const std::string& image,
                           Millis timeout = kRuntimeCommandTimeout);

// Pulls `image`. With a `log_fd` (>= 0: a file open for reading and appending), the runtime's output
// (stdout and stderr) goes there as it comes (the job's pull log, so a long pull shows its
// progress); else (-1) it is only captured. The caller opens the log: in a directory of the job's
// user, only without following links (os/safe_open.h). `cancel_fd` (-1: none) readable ends the
// pull at once, as os::CommandOptions says. An error carries the runtime's message (its last
// "Error..." line onwards, else its last line).
Status pull_image(const ContainerRuntime& runtime, const std::string& image, int log_fd,
                  Millis timeout, int cancel_fd = -1);

}  // namespace gpuq::runner
