// SPDX-License-Identifier: Apache-2.0
#include "daemon/config.h"

namespace gpuq::daemon {

sched::Policy policy_of(const Config& config) {
  if (config.policy == "fifo") return sched::Policy::kFifo;
  if (config.policy == "priority") return sched::Policy::kPriority;
  return sched::Policy::kBackfill;
}

}  // namespace gpuq::daemon
