// SPDX-License-Identifier: Apache-2.0
#include "runner/spare_shim.h"

#include <cerrno>
#include <csignal>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "os/boot_clock.h"
#include "os/process.h"

namespace gpuq::runner {

SpareShim::~SpareShim() { drop(); }

int64_t SpareShim::age_ms() const {
  static const int64_t ticks_per_second = ::sysconf(_SC_CLK_TCK);
  const auto started_ms = static_cast<int64_t>(spare_->start_ticks()) * 1000 / ticks_per_second;
  return os::boot_clock_ms() - started_ms;
}

void SpareShim::drop() {
  if (!spare_) return;
  pid_t pid = spare_->pid();
  // It holds nothing yet: killed, so that a spare stopped by someone cannot hold this thread.
  (void)os::signal_pidfd(pidfd_, SIGKILL);
  spare_.reset();
  ::close(pidfd_);
  pidfd_ = -1;
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

Status SpareShim::refill() {
  if (spare_) return ok();
  auto launched = launch_spare_shim(executable_);
  if (!launched) return tl::unexpected(launched.error());
  auto pidfd = os::open_pidfd_checked(launched->pid(), launched->start_ticks());
  if (!pidfd) {
    pid_t pid = launched->pid();
    ::kill(pid, SIGKILL);  // our child, not reaped yet: the pid is still its
    { LaunchedShim dropped = std::move(*launched); }
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return tl::unexpected(pidfd.error());
  }
  spare_.emplace(std::move(*launched));
  pidfd_ = *pidfd;
  return ok();
}

std::optional<SpareShim::Taken> SpareShim::take(const std::string& run_dir) {
  if (!spare_) return std::nullopt;
  // A pidfd reads as ready once its process has exited: a spare killed while it waited is
  // reaped here, never handed out.
  pollfd exited{pidfd_, POLLIN, 0};
  if (::poll(&exited, 1, 0) != 0 || age_ms() > max_age_ms_) {
    drop();
    return std::nullopt;
  }
  if (!spare_->assign(run_dir)) {
    drop();
    return std::nullopt;
  }
  Taken taken{std::move(*spare_), pidfd_};
  spare_.reset();
  pidfd_ = -1;
  return taken;
}

}  // namespace gpuq::runner
