// SPDX-License-Identifier: Apache-2.0
#include "os/command.h"

#include "os/stuck_helpers.h"
#include "os/process.h"
#include "os/unique_fd.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <string_view>
#include <utility>

extern char** environ;

namespace gpuq::os {
namespace {


using Clock = std::chrono::steady_clock;

// How long to wait for a SIGKILLed child to become reapable before handing it to a background
// reaper: a process stuck in uninterruptible sleep (a hung GPU driver) cannot die until the
// kernel lets it, and the caller's timeout must still hold.
constexpr Millis kKillGrace{2000};

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

// A pipe end that landed on 0, 1 or 2 (the caller closed its own stdio) would be clobbered by
// the child's dup2 actions, so both ends are moved above 2.
Result<UniqueFd> above_stdio(int fd) {
  if (fd > 2) return UniqueFd(fd);
  int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  int err = errno;
  ::close(fd);
  if (moved < 0) return errno_error("fcntl(F_DUPFD_CLOEXEC)", err);
  return UniqueFd(moved);
}

Result<Pipe> make_pipe() {
  int fds[2];
  // O_CLOEXEC from birth: another thread spawning at the same moment must not inherit it.
  if (::pipe2(fds, O_CLOEXEC) != 0) return errno_error("pipe2");
  auto read_end = above_stdio(fds[0]);
  auto write_end = above_stdio(fds[1]);
  if (!read_end) return tl::unexpected(read_end.error());
  if (!write_end) return tl::unexpected(write_end.error());
  return Pipe{std::move(*read_end), std::move(*write_end)};
}

// posix_spawn's C structures, destroyed on every path.
class SpawnSetup {
 public:
  SpawnSetup() {
    ::posix_spawn_file_actions_init(&actions_);
    ::posix_spawnattr_init(&attr_);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
  ~SpawnSetup() {
    ::posix_spawn_file_actions_destroy(&actions_);
    ::posix_spawnattr_destroy(&attr_);
  }
  posix_spawn_file_actions_t* actions() { return &actions_; }
  posix_spawnattr_t* attr() { return &attr_; }

 private:
  posix_spawn_file_actions_t actions_;
  posix_spawnattr_t attr_;
};

// Returns the error number of the first failing setup call, 0 when all succeeded. `in_fd` < 0
// gives the child /dev/null as stdin.
int prepare_spawn(SpawnSetup& setup, int in_fd, int out_fd, int err_fd) {
  posix_spawn_file_actions_t* actions = setup.actions();
  if (in_fd >= 0) {
    if (int rc = ::posix_spawn_file_actions_adddup2(actions, in_fd, 0)) return rc;
  } else if (int rc = ::posix_spawn_file_actions_addopen(actions, 0, "/dev/null", O_RDONLY, 0)) {
    return rc;
  }
  if (int rc = ::posix_spawn_file_actions_adddup2(actions, out_fd, 1)) return rc;
  if (int rc = ::posix_spawn_file_actions_adddup2(actions, err_fd, 2)) return rc;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  // O_CLOEXEC protects our own fds; this also covers fds that libraries opened without it.
  if (int rc = ::posix_spawn_file_actions_addclosefrom_np(actions, 3)) return rc;
#endif

  posix_spawnattr_t* attr = setup.attr();
  // A signal the daemon blocks or ignores (SIGPIPE, SIGCHLD) would otherwise stay blocked or
  // ignored in the child across exec and change how the helper behaves.
  sigset_t empty_mask;
  sigemptyset(&empty_mask);
  sigset_t default_signals;
  sigfillset(&default_signals);
  sigdelset(&default_signals, SIGKILL);
  sigdelset(&default_signals, SIGSTOP);
  short flags = POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (int rc = ::posix_spawnattr_setflags(attr, flags)) return rc;
  // Its own group, so a timeout can kill everything the helper started with one killpg.
  if (int rc = ::posix_spawnattr_setpgroup(attr, 0)) return rc;
  if (int rc = ::posix_spawnattr_setsigmask(attr, &empty_mask)) return rc;
  if (int rc = ::posix_spawnattr_setsigdefault(attr, &default_signals)) return rc;
  return 0;
}

Result<pid_t> spawn(const std::vector<std::string>& argv, int in_fd, int out_fd, int err_fd,
                    char* const* envp) {
  SpawnSetup setup;
  if (int rc = prepare_spawn(setup, in_fd, out_fd, err_fd)) {
    return errno_error("posix_spawn setup", rc);
  }

  std::vector<char*> c_argv;
  c_argv.reserve(argv.size() + 1);
  for (const std::string& arg : argv) c_argv.push_back(const_cast<char*>(arg.c_str()));
  c_argv.push_back(nullptr);

  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, c_argv[0], setup.actions(), setup.attr(), c_argv.data(), envp);
  if (rc == ENOENT) {
    if (argv[0].find('/') != std::string::npos) {
      return fail(Code::kNotFound, fmt::format("{}: program not found", argv[0]));
    }
    return fail(Code::kNotFound, fmt::format("{}: program not found in PATH", argv[0]));
  }
  if (rc != 0) return errno_error(fmt::format("cannot run {}", argv[0]), rc);
  return pid;
}

// argv[0] as execve needs it: looked up in PATH (the caller's, as posix_spawnp does) before a
// fork, since the child may only make async-signal-safe calls.
Result<std::string> program_path(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path = ::getenv("PATH");
  std::string_view dirs = path ? path : "/usr/bin:/bin";
  while (true) {
    size_t colon = dirs.find(':');
    std::string dir(dirs.substr(0, colon));
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  return fail(Code::kNotFound, fmt::format("{}: program not found in PATH", program));
}

// What spawn() does, as another user: fork, and in the child (async-signal-safe calls only: the
// caller may have threads) the same process group, stdio and signal setup, then become_user and
// execve. A failure in the child comes back as its errno on a close-on-exec pipe.
Result<pid_t> spawn_as(const std::vector<std::string>& argv, int in_fd, int out_fd, int err_fd,
                       char* const* envp, const UserIdentity& who) {
  auto program = program_path(argv[0]);
  if (!program) return tl::unexpected(program.error());
  std::vector<char*> c_argv;
  for (const std::string& arg : argv) c_argv.push_back(const_cast<char*>(arg.c_str()));
  c_argv.push_back(nullptr);
  auto report = make_pipe();
  if (!report) return tl::unexpected(report.error());
  const gid_t* groups = who.groups.data();
  size_t group_count = who.groups.size();
  pid_t pid = ::fork();
  if (pid < 0) return errno_error(fmt::format("cannot run {}", argv[0]));
  if (pid == 0) {
    int wfd = report->write.get();
    auto die = [wfd](int err) {
      (void)!::write(wfd, &err, sizeof err);
      ::_exit(127);
    };
    ::setpgid(0, 0);
    struct sigaction defaults{};
    defaults.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) {
      if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &defaults, nullptr);
    }
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    int in = in_fd >= 0 ? in_fd : ::open("/dev/null", O_RDONLY);
    if (in < 0 || ::dup2(in, 0) < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(err_fd, 2) < 0) die(errno);
    ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    if (int err = become_user(who.uid, who.gid, groups, group_count)) die(err);
    ::execve(program->c_str(), c_argv.data(), envp);
    die(errno);
  }
  report->write.reset();
  int err = 0;
  ssize_t n;
  do {
    n = ::read(report->read.get(), &err, sizeof err);
  } while (n < 0 && errno == EINTR);
  if (n != sizeof err) return pid;  // exec'd
  ::waitpid(pid, nullptr, 0);
  return errno_error(fmt::format("cannot run {} as {}", argv[0], who.uid), err);
}

// Whether the child has exited, without reaping it: while it is an unreaped zombie its pid
// (and so its process group id) cannot be reused, which keeps a later killpg aimed at our group.
bool has_exited(pid_t pid) {
  siginfo_t info{};
  info.si_pid = 0;
  if (::waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0) return errno == ECHILD;
  return info.si_pid != 0;
}

constexpr Millis kPollSliceWithoutPidfd{10};

// Reads what is available from `fd` into `sink`. Returns false at end of file.
bool read_some(int fd, std::string& sink, bool& truncated) {
  std::array<char, size_t{64} << 10> buffer;
  ssize_t n = ::read(fd, buffer.data(), buffer.size());
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return false;
  size_t room = kMaxCapturedBytes > sink.size() ? kMaxCapturedBytes - sink.size() : 0;
  size_t keep = std::min(room, static_cast<size_t>(n));
  sink.append(buffer.data(), keep);
  if (keep < static_cast<size_t>(n)) truncated = true;
  return true;
}

void record_status(int status, CommandResult& result) {
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
}

// Waits up to `limit` for the child to exit. Returns true once it has (not yet reaped).
bool wait_for_exit(pid_t pid, const UniqueFd& pidfd, Millis limit) {
  Clock::time_point deadline = Clock::now() + limit;
  while (!has_exited(pid)) {
    auto remaining = std::chrono::ceil<Millis>(deadline - Clock::now());
    if (remaining <= Millis{0}) return false;
    if (pidfd.valid()) {
      pollfd entry{pidfd.get(), POLLIN, 0};
      ::poll(&entry, 1, static_cast<int>(remaining.count()));
    } else {
      ::poll(nullptr, 0, static_cast<int>(std::min(remaining, kPollSliceWithoutPidfd).count()));
    }
  }
  return true;
}

// Kills the child's whole group and reaps the child. If SIGKILL cannot end it within the grace
// period, it takes one of the few stuck-helper slots and a background thread reaps it later
// (os/stuck_helpers.h), so no zombie stays and the caller is not held.
void kill_and_reap(pid_t pid, const UniqueFd& pidfd, const std::vector<std::string>& argv,
                   CommandResult& result) {
  ::kill(-pid, SIGKILL);
  if (kills_are_stuck_for_test() || !wait_for_exit(pid, pidfd, kKillGrace)) {
    result.stuck = true;
    wait_in_background(pid, argv);
    return;
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) == pid) record_status(status, result);
}

// The caller's environment with `extra` ("NAME=VALUE") set, replacing entries of those names.
std::vector<std::string> merged_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> merged;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    std::string_view name = text.substr(0, text.find('='));
    bool replaced = std::any_of(extra.begin(), extra.end(), [&](const std::string& e) {
      return e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=';
    });
    if (!replaced) merged.emplace_back(text);
  }
  merged.insert(merged.end(), extra.begin(), extra.end());
  return merged;
}

// A socket rather than a pipe for the child's stdin: send() with MSG_NOSIGNAL cannot raise
// SIGPIPE in a caller that has not ignored it, when the child exits without reading.
Result<std::pair<UniqueFd, UniqueFd>> make_input_socket() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return errno_error("socketpair");
  auto parent = above_stdio(fds[0]);
  auto child = above_stdio(fds[1]);
  if (!parent) return tl::unexpected(parent.error());
  if (!child) return tl::unexpected(child.error());
  // Only one way: the child reading stdin sees end of file once the parent shuts its side.
  ::shutdown(child->get(), SHUT_WR);
  return std::pair<UniqueFd, UniqueFd>{std::move(*parent), std::move(*child)};
}

// Sends what the socket takes of the rest of `input`; closes `fd` when all is sent or the
// child stopped reading.
void feed_input(UniqueFd& fd, const std::string& input, size_t& sent) {
  while (sent < input.size()) {
    ssize_t n = ::send(fd.get(), input.data() + sent, input.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  fd.reset();
}

}  // namespace

Result<CommandResult> run_command(const std::vector<std::string>& argv, Millis timeout) {
  return run_command_with(argv, timeout, CommandOptions{});
}

Result<CommandResult> run_command_with(const std::vector<std::string>& argv, Millis timeout,
                                       const CommandOptions& options) {
  if (argv.empty() || argv[0].empty()) {
    return fail(Code::kInvalidArgument, "run_command: no program given");
  }
  if (auto admitted = admit_helper(argv); !admitted) return tl::unexpected(admitted.error());
  auto out_pipe = make_pipe();
  if (!out_pipe) return tl::unexpected(out_pipe.error());
  auto err_pipe = make_pipe();
  if (!err_pipe) return tl::unexpected(err_pipe.error());
  UniqueFd input_fd;
  UniqueFd child_input_fd;
  if (options.input) {
    auto input = make_input_socket();
    if (!input) return tl::unexpected(input.error());
    input_fd = std::move(input->first);
    child_input_fd = std::move(input->second);
  }
  std::vector<std::string> env_storage;
  std::vector<char*> envp;
  if (!options.env.empty()) {
    env_storage = merged_environment(options.env);
    for (std::string& entry : env_storage) envp.push_back(entry.data());
    envp.push_back(nullptr);
  }

  const bool to_file = options.output_fd >= 0;
  int child_out = to_file ? options.output_fd : out_pipe->write.get();
  int child_err = to_file ? options.output_fd : err_pipe->write.get();
  auto pid = options.run_as ? spawn_as(argv, child_input_fd.get(), child_out, child_err,
                                        envp.empty() ? environ : envp.data(), *options.run_as)
                            : spawn(argv, child_input_fd.get(), child_out, child_err,
                                    envp.empty() ? environ : envp.data());
  if (!pid) return tl::unexpected(pid.error());
  // Only the child may hold the write ends, or we would never see end of file.
  out_pipe->write.reset();
  err_pipe->write.reset();
  if (to_file) {  // nothing comes through the pipes: only the exit is waited for
    out_pipe->read.reset();
    err_pipe->read.reset();
  }
  child_input_fd.reset();
  size_t input_sent = 0;
  if (input_fd.valid()) feed_input(input_fd, *options.input, input_sent);

  // A pidfd lets poll wake the moment the child exits; without one (kernels before 5.3) the
  // loop falls back to short poll slices.
  auto opened = open_pidfd(*pid);
  UniqueFd pidfd = opened ? UniqueFd(*opened) : UniqueFd();
  CommandResult result;
  UniqueFd& out_fd = out_pipe->read;
  UniqueFd& err_fd = err_pipe->read;
  bool exited = false;
  Clock::time_point deadline = Clock::now() + timeout;

  // Both pipes are drained in one loop, so a child that fills stderr while we wait on stdout
  // (or while we feed its stdin) cannot deadlock against us.
  while (out_fd.valid() || err_fd.valid() || !exited) {
    auto remaining = std::chrono::ceil<Millis>(deadline - Clock::now());
    if (remaining <= Millis{0}) {
      result.timed_out = true;
      break;
    }
    std::array<pollfd, 5> entries{};
    std::array<UniqueFd*, 5> owners{};
    nfds_t count = 0;
    for (UniqueFd* fd : {&out_fd, &err_fd}) {
      if (!fd->valid()) continue;
      entries[count] = pollfd{fd->get(), POLLIN, 0};
      owners[count++] = fd;
    }
    if (input_fd.valid()) {
      entries[count] = pollfd{input_fd.get(), POLLOUT, 0};
      owners[count++] = &input_fd;
    }
    nfds_t cancel_entry = count;
    if (options.cancel_fd >= 0) entries[count++] = pollfd{options.cancel_fd, POLLIN, 0};
    Millis wait = remaining;
    if (!exited && pidfd.valid()) {
      entries[count++] = pollfd{pidfd.get(), POLLIN, 0};
    } else if (!exited) {
      wait = std::min(wait, kPollSliceWithoutPidfd);
    }
    int ready = ::poll(entries.data(), count, static_cast<int>(wait.count()));
    if (ready < 0 && errno != EINTR) {
      auto error = errno_error("poll");
      kill_and_reap(*pid, pidfd, argv, result);
      return error;
    }
    if (ready > 0 && options.cancel_fd >= 0 && entries[cancel_entry].revents != 0) {
      result.cancelled = true;
      break;
    }
    for (nfds_t i = 0; ready > 0 && i < count; ++i) {
      if (owners[i] == nullptr || entries[i].revents == 0) continue;
      if (owners[i] == &input_fd) {
        feed_input(input_fd, *options.input, input_sent);
        continue;
      }
      std::string& sink = owners[i] == &out_fd ? result.out : result.err;
      if (!read_some(owners[i]->get(), sink, result.truncated)) owners[i]->reset();
    }
    if (!exited) exited = has_exited(*pid);
  }

  if (result.timed_out || result.cancelled) {
    kill_and_reap(*pid, pidfd, argv, result);
  } else {
    int status = 0;
    if (::waitpid(*pid, &status, 0) == *pid) record_status(status, result);
  }
  return result;
}

}  // namespace gpuq::os
