// SPDX-License-Identifier: Apache-2.0
// The claim deadline files of the fleet runs a node holds (model/claim_deadline.h), so that a
// run stops by itself when its claim is not renewed in time, even while the daemon is down or
// stopped. One file per claim and attempt in `dir`; the agent names it in the local job's spec
// (JobSpec::claim_deadline_file), rewrites it after every renewal that succeeded, and removes it
// once the claim is no longer held (a run still going then keeps the last deadline it read).
// The files outlive a daemon restart: the next agent takes the claims back from its state file
// and renews the same files. Written atomically but not fsynced: after a crash of the machine
// no run is left to read them.
// Owns the files in `dir`, not the directory's other contents. Thread rules: the agent's thread.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace gpuq::fleet {

class ClaimDeadlineFiles {
 public:
  // `dir` "": no files (the node's runs are not stopped by a deadline).
  ClaimDeadlineFiles(std::string dir, int64_t lease_ms) : dir_(std::move(dir)), lease_ms_(lease_ms) {}

  bool enabled() const { return !dir_.empty(); }
  // The file of `fleet_id`'s claim in `attempt`; "" when disabled.
  std::string path(const std::string& fleet_id, int attempt) const;
  // Writes the deadline that follows a renewal of the claim sent at `renewed_mono`, the agent's
  // monotonic clock (the boot clock on a real node: os/boot_clock.h).
  Status renewed(const std::string& fleet_id, int attempt, int64_t renewed_mono) const;
  void forget(const std::string& fleet_id, int attempt) const;

 private:
  std::string dir_;
  int64_t lease_ms_;
};

}  // namespace gpuq::fleet
