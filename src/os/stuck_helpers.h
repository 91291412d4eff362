// SPDX-License-Identifier: Apache-2.0
// The helper commands (os/command.h) that SIGKILL could not end at once: a process stuck in the
// kernel (uninterruptible sleep in a wedged GPU driver, a hung file system) dies only when the
// kernel lets it, so run_command hands it to a background thread that waits for it and returns.
// Without a bound, a driver that hangs every nvidia-smi would leave one more stuck process and
// one more waiting thread behind at every probe, forever. So at most kMaxStuckHelpers are
// waited for; while that many are stuck, run_command starts nothing and fails at once with an
// error naming them. When one finally ends, its waiter reaps it and its slot frees.
//
// The check is made when a helper starts: helpers already running when the last slot is taken
// may still become stuck themselves, so the count can pass kMaxStuckHelpers by at most the
// number of helpers that were running at that moment (one per calling thread); none starts after.
//
// Owns a process-wide registry (never destroyed: waiter threads may outlive main) and the waiter
// threads. Thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

#include "base/duration.h"
#include "base/status.h"

namespace gpuq::os {

// How many stuck helpers are waited for before run_command refuses to start more. Each is a
// process the kernel keeps (and often a driver lock it holds); more of them helps nobody.
constexpr size_t kMaxStuckHelpers = 4;

struct StuckHelper {
  pid_t pid = 0;
  std::string command;  // the command line, values of NAME=VALUE arguments left out
  Millis stuck_for{0};  // since SIGKILL failed to end it
};

// The helpers waited for now, oldest first.
std::vector<StuckHelper> stuck_helpers();

// For os/command.cc. Ok while fewer than kMaxStuckHelpers helpers are stuck; else
// Code::kUnavailable saying that `command` was not started because N helpers are stuck in the
// kernel, naming each.
Status admit_helper(const std::vector<std::string>& argv);

// For os/command.cc: `pid` (our child, killed with SIGKILL, not yet reapable) takes a slot, and a
// background thread reaps it when it ends and frees the slot.
void wait_in_background(pid_t pid, const std::vector<std::string>& argv);

// For os/command.cc: true when a test's StuckHelperGate says every killed helper is stuck.
bool kills_are_stuck_for_test();

// A command line for messages and logs. REQUIRES tests run as `env -i NAME=VALUE... bash -c`,
// and the values are the job's environment (tokens included): NAME=VALUE arguments show as
// NAME=... so that no value reaches an event or a log.
std::string describe_command(const std::vector<std::string>& argv);

namespace testing {

// Test seam: while a gate exists, every helper that run_command kills (timeout, cancellation)
// counts as stuck, as if SIGKILL had not ended it within the grace period, and its background
// waiter reaps it only once the gate lets it go. The SIGKILL is real, so the process does end;
// only its reaping is held. One gate at a time. The destructor lets every held helper go and
// waits until each is reaped.
class StuckHelperGate {
 public:
  StuckHelperGate();
  ~StuckHelperGate();
  StuckHelperGate(const StuckHelperGate&) = delete;
  StuckHelperGate& operator=(const StuckHelperGate&) = delete;

  // Runs `argv` through run_command and kills it at once (a cancel descriptor that is already
  // readable), leaving it stuck in a slot. Its pid, or why it did not become stuck.
  Result<pid_t> stick(const std::vector<std::string>& argv = {"sleep", "300"});

  // stick() until kMaxStuckHelpers helpers are stuck; the pids it stuck.
  Result<std::vector<pid_t>> fill();

  // Lets the waiter of `pid` reap it, then waits until its slot is free. False when `pid` is not
  // held or its slot did not free within `limit`.
  bool release(pid_t pid, Millis limit = Millis{30'000});

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace testing
}  // namespace gpuq::os
