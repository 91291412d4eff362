// SPDX-License-Identifier: Apache-2.0
#include "runner/spare_shim.h"

#include <cerrno>
#include <csignal>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "os/boot_clock.h"
#include "os/process.h"
#include "runner/shim.h"

namespace gpuq::runner {

SpareShim::Started::~Started() {
  if (!launched_) return;
  pid_t pid = launched_->pid();
  // It holds nothing yet: killed before it is reaped, so that one stopped by someone cannot
  // hold this thread. Through its pidfd when there is one; else by pid, still its own (our
  // child, not reaped yet).
  if (pidfd_.valid()) {
    (void)os::signal_pidfd(pidfd_.get(), SIGKILL);
  } else {
    ::kill(pid, SIGKILL);
  }
  launched_.reset();  // its go pipe closes
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

int64_t SpareShim::age_ms(const Started& spare) const {
  static const int64_t ticks_per_second = ::sysconf(_SC_CLK_TCK);
  const auto started_ms = static_cast<int64_t>(spare.launched_->start_ticks()) * 1000 / ticks_per_second;
  return os::boot_clock_ms() - started_ms;
}

Result<SpareShim::Started> SpareShim::start(const std::string& executable) {
  auto launched = launch_spare_shim(executable);
  if (!launched) return tl::unexpected(launched.error());
  auto pidfd = os::open_pidfd_checked(launched->pid(), launched->start_ticks());
  if (!pidfd) {
    Started unwatched(std::move(*launched), os::UniqueFd());  // killed and reaped here
    return tl::unexpected(pidfd.error());
  }
  return Started(std::move(*launched), os::UniqueFd(*pidfd));
}

void SpareShim::keep(Started started) {
  if (!started.launched_ || spares_.size() >= capacity_) return;  // dropped: killed and reaped
  spares_.push_back(std::move(started));
}

Status SpareShim::refill() {
  while (spares_.size() < capacity_) {
    auto started = start(executable_);
    if (!started) return tl::unexpected(started.error());
    keep(std::move(*started));
  }
  return ok();
}

std::optional<SpareShim::Taken> SpareShim::take(const std::string& run_dir) {
  // A run directory no spare can be sent (runner/shim.h) would be refused by each of them: the
  // caller's own shim gets it on its command line instead, and the spares stay.
  if (run_dir.empty() || run_dir.size() > kMaxAssignedRunDir) return std::nullopt;
  while (!spares_.empty()) {
    Started& oldest = spares_.front();
    // A pidfd reads as ready once its process has exited: a spare killed while it waited is set
    // aside, never handed out; so is one too old.
    pollfd exited{oldest.pidfd_.get(), POLLIN, 0};
    if (age_ms(oldest) > max_age_ms_ || ::poll(&exited, 1, 0) != 0 ||
        !oldest.launched_->assign(run_dir)) {
      retired_.push_back(std::move(oldest));
      spares_.pop_front();
      continue;
    }
    Taken taken{std::move(*oldest.launched_), oldest.pidfd_.release()};
    oldest.launched_.reset();
    spares_.pop_front();
    return taken;
  }
  return std::nullopt;
}

std::vector<SpareShim::Started> SpareShim::retired() { return std::exchange(retired_, {}); }

void SpareShim::retire_aging(int64_t lead_ms) {
  std::deque<Started> kept;
  for (Started& spare : spares_) {
    pollfd exited{spare.pidfd_.get(), POLLIN, 0};
    if (age_ms(spare) >= max_age_ms_ - lead_ms || ::poll(&exited, 1, 0) != 0) {
      retired_.push_back(std::move(spare));
    } else {
      kept.push_back(std::move(spare));
    }
  }
  spares_.swap(kept);
}

size_t SpareShim::young(int64_t lead_ms) const {
  size_t count = 0;
  for (const Started& spare : spares_) {
    pollfd exited{spare.pidfd_.get(), POLLIN, 0};
    if (age_ms(spare) < max_age_ms_ - lead_ms && ::poll(&exited, 1, 0) == 0) ++count;
  }
  return count;
}

std::optional<int64_t> SpareShim::ms_until_aging(int64_t lead_ms) const {
  if (spares_.empty()) return std::nullopt;
  return std::max<int64_t>(0, max_age_ms_ - lead_ms - age_ms(spares_.front()));
}

}  // namespace gpuq::runner
