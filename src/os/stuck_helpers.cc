// SPDX-License-Identifier: Apache-2.0
#include "os/stuck_helpers.h"

#include "os/command.h"

#include <fmt/format.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>

namespace gpuq::os {

namespace testing {
struct StuckHelperGate::State {
  std::set<pid_t> released;  // helpers whose waiter may reap them now
  bool open = false;         // every held helper may be reaped (the gate is going away)
};
}  // namespace testing

namespace {

using Clock = std::chrono::steady_clock;
using GateState = testing::StuckHelperGate::State;

// The longest command text kept for a message: enough to tell nvidia-smi's queries apart.
constexpr size_t kMaxCommandText = 160;

struct Entry {
  pid_t pid;
  std::string command;
  Clock::time_point since;
};

struct Registry {
  std::mutex mutex;
  std::condition_variable changed;  // an entry left, or the gate let a helper go
  std::vector<Entry> stuck;         // oldest first
  std::shared_ptr<GateState> gate;  // set while a test's StuckHelperGate exists
};

// Never destroyed: a waiter thread may still be blocked on a stuck child when main returns.
Registry& registry() {
  static auto* instance = new Registry();
  return *instance;
}

bool is_assignment(const std::string& arg) {
  size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  if (!(std::isalpha(static_cast<unsigned char>(arg[0])) || arg[0] == '_')) return false;
  return std::all_of(arg.begin(), arg.begin() + static_cast<std::ptrdiff_t>(eq), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// Waits (blocking) until `pid` ends, reaps it and frees its slot.
void reap_and_free(pid_t pid, const std::shared_ptr<GateState>& gate) {
  Registry& r = registry();
  if (gate) {
    std::unique_lock lock(r.mutex);
    r.changed.wait(lock, [&] { return gate->open || gate->released.count(pid) != 0; });
  }
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  {
    std::lock_guard lock(r.mutex);
    std::erase_if(r.stuck, [pid](const Entry& e) { return e.pid == pid; });
  }
  r.changed.notify_all();
}

}  // namespace

std::string describe_command(const std::vector<std::string>& argv) {
  std::string text;
  for (const std::string& arg : argv) {
    if (!text.empty()) text += ' ';
    text += is_assignment(arg) ? arg.substr(0, arg.find('=') + 1) + "..." : arg;
    if (text.size() > kMaxCommandText) {
      text.resize(kMaxCommandText);
      text += "...";
      break;
    }
  }
  return text;
}

std::vector<StuckHelper> stuck_helpers() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  Clock::time_point now = Clock::now();
  std::vector<StuckHelper> list;
  for (const Entry& e : r.stuck) {
    list.push_back({e.pid, e.command, std::chrono::floor<Millis>(now - e.since)});
  }
  return list;
}

Status admit_helper(const std::vector<std::string>& argv) {
  std::vector<StuckHelper> stuck = stuck_helpers();
  if (stuck.size() < kMaxStuckHelpers) return ok();
  std::string names;
  for (const StuckHelper& h : stuck) {
    if (!names.empty()) names += "; ";
    names += fmt::format("pid {} `{}` (stuck {})", h.pid, h.command, format_duration(h.stuck_for));
  }
  return fail(Code::kUnavailable,
              fmt::format("not starting `{}`: {} helper commands are stuck in the kernel "
                          "(SIGKILL did not end them: a wedged GPU driver or file system?), and "
                          "no more are started until one of them ends: {}",
                          describe_command(argv), stuck.size(), names));
}

void wait_in_background(pid_t pid, const std::vector<std::string>& argv) {
  Registry& r = registry();
  std::shared_ptr<GateState> gate;
  {
    std::lock_guard lock(r.mutex);
    r.stuck.push_back({pid, describe_command(argv), Clock::now()});
    gate = r.gate;
  }
  try {
    std::thread([pid, gate] { reap_and_free(pid, gate); }).detach();
  } catch (const std::system_error&) {
    // No thread to wait with: the slot stays taken (and the child unreaped), which keeps the
    // bound honest rather than losing count of a stuck process.
  }
}

bool kills_are_stuck_for_test() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.gate != nullptr;
}

namespace testing {

StuckHelperGate::StuckHelperGate() : state_(std::make_shared<State>()) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.gate = state_;
}

StuckHelperGate::~StuckHelperGate() {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  r.gate = nullptr;
  state_->open = true;
  r.changed.notify_all();
  // Helpers held by this gate are gone from the registry once reaped; a test ends clean.
  r.changed.wait_for(lock, std::chrono::seconds(30), [&] { return r.stuck.empty(); });
}

Result<pid_t> StuckHelperGate::stick(const std::vector<std::string>& argv) {
  int cancel = ::eventfd(1, EFD_CLOEXEC);
  if (cancel < 0) return errno_error("eventfd");
  CommandOptions options;
  options.cancel_fd = cancel;
  size_t before = stuck_helpers().size();
  auto result = run_command_with(argv, Millis{10'000}, options);
  ::close(cancel);
  if (!result) return tl::unexpected(result.error());
  auto stuck = stuck_helpers();
  if (!result->cancelled || !result->stuck || stuck.size() != before + 1) {
    return fail(Code::kInternal, describe_command(argv) + " was not left stuck");
  }
  return stuck.back().pid;
}

Result<std::vector<pid_t>> StuckHelperGate::fill() {
  std::vector<pid_t> pids;
  while (stuck_helpers().size() < kMaxStuckHelpers) {
    auto pid = stick();
    if (!pid) return tl::unexpected(pid.error());
    pids.push_back(*pid);
  }
  return pids;
}

bool StuckHelperGate::release(pid_t pid, Millis limit) {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  auto held = [&] {
    return std::any_of(r.stuck.begin(), r.stuck.end(), [pid](const Entry& e) { return e.pid == pid; });
  };
  if (!held()) return false;
  state_->released.insert(pid);
  r.changed.notify_all();
  return r.changed.wait_for(lock, limit, [&] { return !held(); });
}

}  // namespace testing
}  // namespace gpuq::os
