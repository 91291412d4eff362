// SPDX-License-Identifier: Apache-2.0
#include "runner/claim_watch.h"

#include <cstdint>
#include <ctime>
#include <sys/timerfd.h>
#include <unistd.h>

#include <fmt/format.h>

#include "base/time.h"
#include "os/boot_clock.h"
#include "os/process.h"

namespace gpuq::runner {

ClaimWatch::~ClaimWatch() {
  if (timer_fd_ >= 0) ::close(timer_fd_);
}

ClaimWatch::Due ClaimWatch::start() {
  if (file_.empty()) return Due::kNothing;
  timer_fd_ = ::timerfd_create(CLOCK_BOOTTIME, TFD_NONBLOCK | TFD_CLOEXEC);
  // Without a timer the deadline is still checked at each of the shim's ticks, a second late.
  return check();
}

ClaimWatch::Due ClaimWatch::check() {
  if (file_.empty() || killed_) return Due::kNothing;
  if (timer_fd_ >= 0) {
    uint64_t expirations = 0;
    (void)!::read(timer_fd_, &expirations, sizeof expirations);  // clears its readiness
  }
  int64_t now = os::boot_clock_ms();
  if (stopping_) {
    if (now < deadline_.kill_by_boot_ms) {
      arm(deadline_.kill_by_boot_ms);
      return Due::kNothing;
    }
    killed_ = true;
    return Due::kKill;
  }
  if (!read_once_ || now >= deadline_.stop_at_boot_ms) read_file();
  if (read_once_ && now < deadline_.stop_at_boot_ms) {
    arm(deadline_.stop_at_boot_ms);
    return Due::kNothing;
  }
  stopping_ = true;
  lapse_ = describe_lapse();
  arm(deadline_.kill_by_boot_ms);
  return Due::kStop;
}

void ClaimWatch::read_file() {
  auto text = os::read_file(file_);
  auto parsed = text ? parse_claim_deadline(*text) : Result<ClaimDeadline>(tl::unexpected(text.error()));
  if (!parsed) {
    read_problem_ = parsed.error().message;
    return;
  }
  deadline_ = *parsed;
  read_once_ = true;
  read_problem_.clear();
}

void ClaimWatch::arm(int64_t at_boot_ms) {
  if (timer_fd_ < 0) return;
  itimerspec spec{};
  // 0 would disarm the timer: a time already past is made the first instant of the clock.
  at_boot_ms = std::max<int64_t>(at_boot_ms, 1);
  spec.it_value.tv_sec = at_boot_ms / 1000;
  spec.it_value.tv_nsec = (at_boot_ms % 1000) * 1'000'000;
  ::timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr);
}

std::string ClaimWatch::describe_lapse() const {
  if (!read_once_) {
    return fmt::format("its fleet claim's deadline could not be read from {} ({}), so it may not run",
                       file_, read_problem_);
  }
  int64_t stop_at_wall = wall_now_ms() - (os::boot_clock_ms() - deadline_.stop_at_boot_ms);
  return fmt::format("its fleet claim was not renewed by {} (the node's fleet agent could not reach the "
                     "bucket, or its daemon was down), so another node may take the job over",
                     format_rfc3339(stop_at_wall));
}

}  // namespace gpuq::runner
