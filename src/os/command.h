// SPDX-License-Identifier: Apache-2.0
// Running a short external program (nvidia-smi, a REQUIRES shell test) with a hard timeout and
// capturing what it prints. This is for helpers whose output the daemon reads, not for jobs:
// jobs are started by the runner through `gpuq shim` and outlive the daemon.
//
// The child is spawned with posix_spawnp (safe in a multi-threaded caller, unlike fork; with
// CommandOptions::run_as, a fork whose child makes only async-signal-safe calls), in its
// own process group, with stdin from /dev/null (or fed CommandOptions::input) and no file
// descriptor of the caller other than its stdio; it inherits the caller's environment (plus
// CommandOptions::env). On timeout or cancellation the whole group is killed, so helpers that
// start helpers leave nothing behind.
//
// Owns nothing after it returns: every pipe is closed and the child is reaped (or handed to a
// background reaper if SIGKILL cannot end it at once, e.g. stuck in a driver). Those stuck
// helpers are bounded (os/stuck_helpers.h): while kMaxStuckHelpers of them are waited for,
// run_command starts nothing and fails at once naming them.
// Thread rules: run_command may be called from any number of threads at once. It reaps only the
// pid it spawned; a caller that reaps with waitpid(-1) or sets SIGCHLD to SIG_IGN breaks it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "base/duration.h"
#include "base/status.h"
#include "os/identity.h"

namespace gpuq::os {

// Each of stdout and stderr keeps at most this much; the rest is read and dropped so a chatty
// child neither blocks on a full pipe nor grows the daemon's memory without bound.
constexpr size_t kMaxCapturedBytes = 64 << 20;

struct CommandResult {
  int exit_code = -1;      // the exit status, or -1 when the child was ended by a signal
  int signal = 0;          // the signal that ended the child, 0 when it exited
  bool timed_out = false;  // the deadline passed first; the group was killed with SIGKILL
  std::string out;         // stdout as read until exit or the deadline
  std::string err;         // stderr as read until exit or the deadline
  bool truncated = false;  // out or err reached kMaxCapturedBytes and lost its tail
  bool cancelled = false;  // CommandOptions::cancel_fd became readable first; the group was killed
  bool stuck = false;      // killed, but SIGKILL did not end it within a grace period: it is
                           // waited for in the background (os/stuck_helpers.h)
};

// What a caller may add to a run: used by event hooks, which hand the event to a shell command.
struct CommandOptions {
  // Written to the child's stdin, which then reaches end of file. nullopt: stdin is /dev/null.
  // A child that exits or closes stdin without reading it all is not an error.
  std::optional<std::string> input;
  // "NAME=VALUE" entries set in the child's environment (replacing inherited ones of that name).
  std::vector<std::string> env;
  // When readable (a pipe or eventfd the caller signals), the child's group is killed at once and
  // the result says `cancelled`: how a caller that shuts down stops a command early.
  int cancel_fd = -1;
  // Set: the child runs as this user (its uid, gid and groups; the strings are not used), through
  // fork and become_user instead of posix_spawn, which cannot change them. The root daemon runs
  // a job's REQUIRES and DONE_IF tests so, as the job's submitter. Look it up before the call.
  std::optional<UserIdentity> run_as;
  // Set (>= 0): the child's stdout and stderr are this fd (a log the caller opened, appended to
  // as the output comes) instead of pipes; the result's `out` and `err` are then empty.
  int output_fd = -1;
};

// Runs argv (argv[0] is looked up in PATH) and waits until it exits and both of its output pipes
// are closed, or until `timeout` passes. A background process that keeps the pipes open counts
// as still running, as in Python's subprocess.run. A program that cannot be found returns
// Code::kNotFound naming it; other spawn failures return the errno as an Error; while
// kMaxStuckHelpers helpers are stuck in the kernel, Code::kUnavailable naming them, and nothing
// is started. A child that fails or times out is not an Error: look at the CommandResult.
Result<CommandResult> run_command(const std::vector<std::string>& argv, Millis timeout);
// The same with options (a distinct name, so `&run_command` still names one function).
Result<CommandResult> run_command_with(const std::vector<std::string>& argv, Millis timeout,
                                       const CommandOptions& options);

}  // namespace gpuq::os
