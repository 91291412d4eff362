// SPDX-License-Identifier: Apache-2.0
// The clock that fleet claim deadlines are written in (model/claim_deadline.h): CLOCK_BOOTTIME,
// milliseconds since this machine booted. It never steps (NTP cannot move it), it counts the
// time the machine was suspended (the fleet's other nodes saw that time pass too), and every
// process of the boot reads the same value, so a deadline written by one daemon is understood by
// a run's shim, and by the next daemon after a restart. Thread-safe.
#pragma once

#include <cstdint>

namespace gpuq::os {

int64_t boot_clock_ms();

}  // namespace gpuq::os
