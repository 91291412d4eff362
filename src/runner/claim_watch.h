// SPDX-License-Identifier: Apache-2.0
// The shim's watch over a fleet run's claim deadline (model/claim_deadline.h), so that a run
// never outlives its claim, even while no daemon is alive to cancel it. A timerfd on
// CLOCK_BOOTTIME is armed at the deadline the shim knows; when it fires, the deadline file is
// read again, and the run must stop unless the fleet agent has moved the deadline on. Reading
// the file only when the known deadline arrives costs nothing while the agent renews on time,
// and a timer on the boot clock also fires for a deadline that passed while the machine slept.
// Once the run is stopping, the timer is armed at the deadline's kill-by time, when the run is
// SIGKILLed whatever its grace. A file that cannot be read leaves the last deadline read in force
// (none read yet: the run may not start). Without a file (local jobs) it never fires.
// Single-threaded; owns its timerfd, which it opens only in start(): a PreparedShim is built in
// the spawner's process, where an fd would leak.
#pragma once

#include <string>

#include "model/claim_deadline.h"

namespace gpuq::runner {

class ClaimWatch {
 public:
  enum class Due {
    kNothing,  // the claim is current (or there is none to watch)
    kStop,     // the deadline passed unrenewed: stop the run now (once)
    kKill,     // the run is stopping and its kill-by time has come: SIGKILL it (once)
  };

  explicit ClaimWatch(std::string file) : file_(std::move(file)) {}
  ~ClaimWatch();
  ClaimWatch(const ClaimWatch&) = delete;
  ClaimWatch& operator=(const ClaimWatch&) = delete;

  // Opens the timer and says what is due: kStop when the deadline has passed already (or cannot
  // be read), and the job must not start.
  Due start();
  // For poll(2): readable when check() may have something to say; -1 when there is nothing to
  // watch.
  int fd() const { return timer_fd_; }
  // What is due now; re-arms the timer for what comes next.
  Due check();
  // Why the run was stopped, for people: by when its claim should have been renewed.
  const std::string& lapse() const { return lapse_; }

 private:
  void read_file();
  void arm(int64_t at_boot_ms);
  std::string describe_lapse() const;

  std::string file_;
  int timer_fd_ = -1;
  ClaimDeadline deadline_;
  bool read_once_ = false;
  std::string read_problem_;  // why the last read failed; "" after one that worked
  bool stopping_ = false;
  bool killed_ = false;
  std::string lapse_;
};

}  // namespace gpuq::runner
