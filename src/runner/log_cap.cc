// SPDX-License-Identifier: Apache-2.0
#include "runner/log_cap.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <fmt/format.h>

namespace gpuq::runner {

Result<LogCap> LogCap::open_at(int dir_fd, const std::string& name, int64_t max_bytes) {
  if (max_bytes <= 0) return LogCap(-1, 0);
  int fd = ::openat(dir_fd, name.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno_error("open " + name);
  return LogCap(fd, max_bytes);
}

LogCap::LogCap(LogCap&& other) noexcept
    : fd_(other.fd_), max_(other.max_), capped_end_(other.capped_end_), dropped_(other.dropped_) {
  other.fd_ = -1;
}

LogCap::~LogCap() {
  if (fd_ >= 0) ::close(fd_);
}

std::string LogCap::notice(int64_t max_bytes) {
  return fmt::format("\n[gpuq: output.log reached its cap of {} bytes ([runs] max_log); the rest of "
                     "this run's output was dropped]\n",
                     max_bytes);
}

void LogCap::check() {
  if (fd_ < 0) return;
  struct stat st{};
  if (::fstat(fd_, &st) != 0) return;
  int64_t size = st.st_size;
  if (capped_end_ == 0) {
    if (size <= max_) return;
    std::string line = notice(max_);
    if (::ftruncate(fd_, max_) != 0) return;
    // Written at an exact offset: a write of the job racing this one lands before or is cut.
    ssize_t n = ::pwrite(fd_, line.data(), line.size(), max_);
    if (n != static_cast<ssize_t>(line.size())) return;  // tried again at the next check
    capped_end_ = max_ + static_cast<int64_t>(line.size());
    dropped_ += size - max_;
    return;
  }
  if (size <= capped_end_) return;
  if (::ftruncate(fd_, capped_end_) == 0) dropped_ += size - capped_end_;
}

bool disk_is_full(const std::string& dir) {
  struct statvfs fs{};
  if (::statvfs(dir.c_str(), &fs) != 0) return false;
  uint64_t blocks = ::geteuid() == 0 ? fs.f_bfree : fs.f_bavail;
  return blocks * fs.f_frsize < (64u << 10);
}

}  // namespace gpuq::runner
