// SPDX-License-Identifier: Apache-2.0
// A fleet run's claim deadline: the contract between a node's fleet agent, which holds the
// run's claim in the bucket, and the run's shim, which stops the run when the claim was not
// renewed in time, even while no daemon is alive (docs/fleet.md, "Guarantees").
//
// The agent writes one small file per claim (named by JobSpec::claim_deadline_file) after each
// renewal that succeeded, atomically (a temporary file, then a rename); the shim reads it each
// time the deadline it knows arrives, and stops the run when the file has not moved it on.
// Times are CLOCK_BOOTTIME milliseconds (os/boot_clock.h): the agent and the shim run on the
// same machine, in the same boot, and a daemon restart changes nothing about that clock.
// Pure encoding and arithmetic; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace gpuq {

struct ClaimDeadline {
  int64_t stop_at_boot_ms = 0;  // from then on the run is stopped: SIGTERM, then the kill grace
  int64_t kill_by_boot_ms = 0;  // and SIGKILL by then at the latest, whatever the grace
};

// The deadline after a renewal that left this node at `renewed_boot_ms`, for a claim whose lease
// is `lease_ms`: stop at lease/2, SIGKILL by 3/4 of the lease. No other node can take the job
// over before the claim has stood unchanged for a whole lease since it saw this renewal, which
// it cannot see before the renewal was sent: the run is gone a quarter of a lease before.
// (The agent itself gives the claim up at lease/3 when it is alive to notice; this deadline is
// for when it is not.)
ClaimDeadline claim_deadline_after_renewal(int64_t renewed_boot_ms, int64_t lease_ms);

std::string encode_claim_deadline(const ClaimDeadline& deadline);
// kCorruption for text that is not a deadline the agent wrote.
Result<ClaimDeadline> parse_claim_deadline(std::string_view text);

}  // namespace gpuq
