#include "daemon/instance_lock.h"

#include <cerrno>
#include <fcntl.h>
#include <string>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>

namespace gpuq::daemon {

Result<InstanceLock> InstanceLock::acquire(const std::string& path, const std::string& home) {
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
