// SPDX-License-Identifier: Apache-2.0
#include "daemon/instance_lock.h"

#include <cerrno>
#include <fcntl.h>
#include <string>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <fmt/format.h>

namespace gpuq::daemon {
namespace {

// True when `pid` is gone or a zombie: a killed daemon whose other threads are still exiting
// keeps its lock for a moment after its main thread shows as a zombie.
bool is_exiting(const std::string& pid) {
  if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) return false;
  std::ifstream in("/proc/" + pid + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close = stat.rfind(')');
  return stat.empty() || (close != std::string::npos && stat.size() > close + 2 && stat[close + 2] == 'Z');
}

}  // namespace

Result<InstanceLock> InstanceLock::acquire(const std::string& path, const std::string& home) {
  for (int attempt = 0;; ++attempt) {
    std::string holder;
    auto lock = try_acquire(path, home, holder);
    if (lock || attempt >= 50 || !is_exiting(holder)) return lock;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

Result<InstanceLock> InstanceLock::try_acquire(const std::string& path, const std::string& home,
                                               std::string& holder) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return errno_error("open " + path);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    char buffer[32] = {};
    ssize_t n = ::pread(fd, buffer, sizeof buffer - 1, 0);
    ::close(fd);
    if (err != EWOULDBLOCK) return errno_error("lock " + path, err);
    std::string pid = n > 0 ? std::string(buffer, static_cast<size_t>(n)) : "?";
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    holder = pid;
    return fail(Code::kFailedPrecondition,
                fmt::format("another gpuq daemon (pid {}) is already running on {}; stop it "
                            "first (kill {}) or use another --home",
                            pid, home, pid));
  }
  InstanceLock lock(fd);
  lock.write_pid();
  return lock;
}

InstanceLock::~InstanceLock() {
  if (fd_ >= 0) ::close(fd_);
}

void InstanceLock::write_pid() {
  std::string text = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) == 0) (void)!::pwrite(fd_, text.data(), text.size(), 0);
}

}  // namespace gpuq::daemon
