// SPDX-License-Identifier: Apache-2.0
// The log a fleet node publishes for an attempt (jobs/ID/logs/ATTEMPT.log): its runs' output.log
// files one after the other (each after "=== run N ===" when there are several), of which the
// last `max_bytes` are kept, after a line saying how many bytes before them are left out. Read
// from the files' ends: a run's log of gigabytes is never read whole, nor held in memory.
// Reads the files; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuq::fleet {

// The size of the whole log (headers and every file as it is now; a missing file counts as
// empty): what changes when a run writes, whatever is cut.
uint64_t log_size(const std::vector<std::string>& paths);

// The published log: its last `max_bytes`, with the line that says what is left out.
std::string log_tail(const std::vector<std::string>& paths, uint64_t max_bytes);

}  // namespace gpuq::fleet
