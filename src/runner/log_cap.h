// SPDX-License-Identifier: Apache-2.0
// Keeps a run's output.log at most `max_bytes` long while the job writes it itself (the job's
// stdout and stderr are the log file, opened O_APPEND: no copy through the shim, so a slow or
// dead shim never blocks or loses the job's output). Past the cap the file is cut back to the
// cap, a line saying so is written there, and whatever the job appends after it is cut off at
// each check, so the file stays within the cap plus what the job writes between two checks.
//
// Owns a second descriptor of the log (not O_APPEND, so the notice lands at an exact offset);
// the shim calls check() on a timer and once more at the end. One thread.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace gpuq::runner {

class LogCap {
 public:
  // `max_bytes` <= 0: no cap (check() does nothing).
  // The log `name` in the directory `dir_fd`, never through a link.
  static Result<LogCap> open_at(int dir_fd, const std::string& name, int64_t max_bytes);
  LogCap(LogCap&& other) noexcept;
  LogCap(const LogCap&) = delete;
  LogCap& operator=(const LogCap&) = delete;
  ~LogCap();

  // Cuts the log back if it grew past the cap. Errors (a full disk) are ignored here: the next
  // check tries again.
  void check();
  // At least this many bytes of the job's output were dropped so far.
  int64_t dropped_bytes() const { return dropped_; }
  bool capped() const { return capped_end_ > 0; }

  // The line written at the cap.
  static std::string notice(int64_t max_bytes);

 private:
  LogCap(int fd, int64_t max_bytes) : fd_(fd), max_(max_bytes) {}
  int fd_ = -1;
  int64_t max_ = 0;
  int64_t capped_end_ = 0;  // where the notice ends, once written
  int64_t dropped_ = 0;
};

// True when the file system holding `dir` has (almost) no space left for this process's
// writes: under 64 KiB available (to root, the blocks reserved for root count as available).
bool disk_is_full(const std::string& dir);

}  // namespace gpuq::runner
