// SPDX-License-Identifier: Apache-2.0
#include "runner/job_launch.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "runner/container_runtime.h"

namespace gpuq::runner {

JobLaunch::JobLaunch(const RunSpec& spec, std::vector<std::string> argv, const std::map<std::string, std::string>& extra_env,
                     const std::vector<std::string>* runtime_env)
    : argv_strings_(std::move(argv)), run_as_(spec.run_as) {
  std::map<std::string, std::string> env = spec.env;
  if (run_as_) {
    // Who the job is, from the passwd entry: never what the submitted environment said.
    env["HOME"] = run_as_->home;
    env["USER"] = run_as_->login;
    env["LOGNAME"] = run_as_->login;
    env["SHELL"] = run_as_->shell;
  }
  for (const auto& [k, v] : extra_env) env[k] = v;
  auto path = spec.env.find("PATH");
  path_ = path != spec.env.end() ? path->second : "/usr/bin:/bin";
  if (runtime_env != nullptr && spec.root_runtime) {
    as_runtime_ = true;
    run_as_.reset();
    env_file_ = env_file_text(spec.root_runtime->env_file, env);
    env_strings_ = *runtime_env;
    path_ = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    for (const std::string& entry : env_strings_) {
      if (entry.rfind("PATH=", 0) == 0) path_ = entry.substr(5);
    }
  } else {
    for (const auto& [k, v] : env) env_strings_.push_back(k + "=" + v);
  }
  for (auto& s : env_strings_) envp_.push_back(s.data());
  envp_.push_back(nullptr);
  for (const auto& a : argv_strings_) argv_.push_back(const_cast<char*>(a.c_str()));
  argv_.push_back(nullptr);
  posix_spawn_file_actions_init(&actions_);
  posix_spawn_file_actions_addopen(&actions_, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addchdir_np(&actions_, spec.cwd.c_str());
  posix_spawnattr_init(&attr_);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr_, &none);
  sigset_t defaults = every_signal();
  posix_spawnattr_setsigdefault(&attr_, &defaults);
  posix_spawnattr_setpgroup(&attr_, 0);
  posix_spawnattr_setflags(&attr_, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                       POSIX_SPAWN_SETSIGDEF);
}

JobLaunch::~JobLaunch() {
  posix_spawn_file_actions_destroy(&actions_);
  posix_spawnattr_destroy(&attr_);
}

Result<pid_t> JobLaunch::spawn(const RunSpec& spec, int log_fd) {
  struct stat st{};
  if (::stat(spec.cwd.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return fail(Code::kNotFound,
                fmt::format("cannot enter the job's directory {}: it does not exist now", spec.cwd));
  }
  posix_spawn_file_actions_adddup2(&actions_, log_fd, 1);
  posix_spawn_file_actions_adddup2(&actions_, log_fd, 2);
  // posix_spawnp searches this process's PATH: make it the job's.
  ::setenv("PATH", path_.c_str(), 1);
  // And its umask the job's, not the daemon's 077: the shim's own files are opened already, and
  // exit.json is written with an explicit 0600.
  ::umask(spec.umask);
  if (as_runtime_) return spawn_runtime();
  if (run_as_) return spawn_as_user(spec, log_fd);
  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, argv_[0], &actions_, &attr_, argv_.data(), envp_.data());
  if (rc != 0) return errno_error("cannot run " + argv_strings_[0], rc);
  return pid;
}

Result<pid_t> JobLaunch::spawn_as_user(const RunSpec& spec, int log_fd) {
  const sigset_t ignored = ignored_signals();  // read here: the child only resets them
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return errno_error("pipe");
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    ::close(report[0]);
    ::close(report[1]);
    return errno_error("cannot fork the job", err);
  }
  if (pid == 0) {
    ::close(report[0]);
    auto die = [&](int stage) {
      int failure[2] = {stage, errno};
      (void)!::write(report[1], failure, sizeof failure);
      ::_exit(127);
    };
    ::setpgid(0, 0);
    for (int sig = 1; sig < NSIG; ++sig) {
      if (sigismember(&ignored, sig) == 1) ::signal(sig, SIG_DFL);
    }
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd < 0 || ::dup2(null_fd, 0) < 0 || ::dup2(log_fd, 1) < 0 || ::dup2(log_fd, 2) < 0) die(kStageStdio);
    if (int err = os::become_user(run_as_->uid, run_as_->gid, run_as_->groups.data(), run_as_->groups.size())) {
      errno = err;
      die(kStageIdentity);
    }
    if (::chdir(spec.cwd.c_str()) != 0) die(kStageDirectory);
    ::execvpe(argv_[0], argv_.data(), envp_.data());
    die(kStageExec);
  }
  ::close(report[1]);
  ::setpgid(pid, pid);
  int failure[2] = {0, 0};
  ssize_t n;
  do {
    n = ::read(report[0], failure, sizeof failure);
  } while (n < 0 && errno == EINTR);
  ::close(report[0]);
  if (n != sizeof failure) return pid;  // exec'd
  ::waitpid(pid, nullptr, 0);
  switch (failure[0]) {
    case kStageIdentity:
      return errno_error(fmt::format("cannot become the user {} (uid {})", run_as_->login, run_as_->uid), failure[1]);
    case kStageDirectory:
      return errno_error(fmt::format("cannot enter the job's directory {} as {}", spec.cwd, run_as_->login),
                         failure[1]);
    case kStageStdio:
      return errno_error("cannot set up the job's stdin and output", failure[1]);
    default:
      return errno_error("cannot run " + argv_strings_[0], failure[1]);
  }
}

Result<std::string> JobLaunch::env_file_text(const std::vector<std::string>& names,
                                  const std::map<std::string, std::string>& env) {
  std::string text;
  for (const std::string& name : names) {
    auto it = env.find(name);
    if (it == env.end()) continue;
    if (it->second.find_first_of("\n\r") != std::string::npos) {
      return fail(Code::kInvalidArgument,
                  fmt::format("the variable {} holds a line break, which the container's env file "
                              "cannot carry (on a shared box a container step gets the job's "
                              "variables through one): pass it as a file instead", name));
    }
    text += name + "=" + it->second + "\n";
  }
  return text;
}

Result<pid_t> JobLaunch::spawn_runtime() {
  if (!env_file_) return tl::unexpected(env_file_.error());
  int file = ::memfd_create("gpuq-env-file", MFD_CLOEXEC);
  if (file < 0) return errno_error("cannot make the container's env file");
  if (file <= kEnvFileFd) {  // never one the dup2s below replace first
    int moved = ::fcntl(file, F_DUPFD_CLOEXEC, kEnvFileFd + 1);
    ::close(file);
    if (moved < 0) return errno_error("cannot make the container's env file");
    file = moved;
  }
  const std::string& text = *env_file_;
  bool written = ::write(file, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                 ::lseek(file, 0, SEEK_SET) == 0;
  if (!written) {
    int err = errno;
    ::close(file);
    return errno_error("cannot write the container's env file", err);
  }
  posix_spawn_file_actions_adddup2(&actions_, file, kEnvFileFd);
  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, argv_[0], &actions_, &attr_, argv_.data(), envp_.data());
  ::close(file);
  if (rc != 0) return errno_error("cannot run " + argv_strings_[0], rc);
  return pid;
}

sigset_t JobLaunch::every_signal() {
  sigset_t set{};
  sigfillset(&set);  // glibc's leaves out its two internal signals
  sigdelset(&set, SIGKILL);
  sigdelset(&set, SIGSTOP);
  return set;
}

sigset_t JobLaunch::ignored_signals() {
  static const sigset_t ignored = [] {
    sigset_t set{};
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    for (int sig = 1; sig < NSIG; ++sig) {
      struct sigaction current{};
      if (::sigaction(sig, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) sigaddset(&set, sig);
    }
    return set;
  }();
  return ignored;
}

}  // namespace gpuq::runner
