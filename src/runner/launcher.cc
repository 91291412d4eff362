// SPDX-License-Identifier: Apache-2.0
#include "runner/launcher.h"

#include <cerrno>
#include <cstdint>
#include <csignal>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "os/process.h"
#include "runner/shim.h"

extern char** environ;

namespace gpuq::runner {

LaunchedShim::LaunchedShim(LaunchedShim&& other) noexcept
    : pid_(other.pid_), start_ticks_(other.start_ticks_), go_fd_(other.go_fd_) {
  other.go_fd_ = -1;
}

LaunchedShim::~LaunchedShim() {
  if (go_fd_ >= 0) ::close(go_fd_);
}

Status LaunchedShim::release() {
  char go = 'g';
  ssize_t n;
  do {
    n = ::write(go_fd_, &go, 1);
  } while (n < 0 && errno == EINTR);
  int err = errno;
  ::close(go_fd_);
  go_fd_ = -1;
  if (n != 1) return errno_error("releasing the shim", err);
  return ok();
}

Status LaunchedShim::assign(const std::string& run_dir) {
  if (run_dir.empty() || run_dir.size() > kMaxAssignedRunDir) {
    return fail(Code::kInvalidArgument, "a run directory of " + std::to_string(run_dir.size()) +
                                            " bytes cannot be assigned to a spare shim");
  }
  // One write of at most PIPE_BUF bytes: atomic, and the empty pipe takes it whole.
  auto length = static_cast<uint32_t>(run_dir.size());
  std::string message(reinterpret_cast<const char*>(&length), sizeof length);
  message += run_dir;
  ssize_t n;
  do {
    n = ::write(go_fd_, message.data(), message.size());
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(message.size())) return errno_error("assigning the spare shim its run");
  return ok();
}

std::string shim_binary_beside(const std::string& full) {
  const auto slash = full.rfind('/');
  std::string shim = (slash == std::string::npos ? std::string(".") : full.substr(0, slash)) + "/gpuq-shim";
  return ::access(shim.c_str(), X_OK) == 0 ? shim : "";
}

namespace {

// Spawns `executable shim run_dir_word 3`, the read end of its go pipe as fd 3.
Result<LaunchedShim> spawn_shim(const std::string& executable, const std::string& run_dir_word) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return errno_error("pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[0], 3);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
  std::string shim_word = "shim", go_word = "3";
  char* argv[] = {const_cast<char*>(executable.c_str()), shim_word.data(),
                  const_cast<char*>(run_dir_word.c_str()), go_word.data(), nullptr};
  pid_t pid = 0;
  int rc = posix_spawn(&pid, executable.c_str(), &actions, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(pipe_fds[0]);
  if (rc != 0) {
    ::close(pipe_fds[1]);
    return errno_error("starting the shim " + executable, rc);
  }
  auto ticks = os::process_start_ticks(pid);
  if (!ticks) {
    // It cannot have run the job (it waits for the pipe): killed and reaped (our child, not
    // reaped yet, so the pid is still its own), and the error reported.
    ::close(pipe_fds[1]);
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return tl::unexpected(ticks.error());
  }
  return LaunchedShim(pid, *ticks, pipe_fds[1]);
}

}  // namespace

Result<LaunchedShim> launch_shim(const std::string& executable, const std::string& run_dir) {
  return spawn_shim(executable, run_dir);
}

Result<LaunchedShim> launch_spare_shim(const std::string& executable) {
  return spawn_shim(executable, std::string(kSpareRunDirWord));
}

}  // namespace gpuq::runner
