// SPDX-License-Identifier: Apache-2.0
// Job traces for replay: a CSV file, one job per line, as cluster logs are usually exported:
//   id,submit_s,gpus,duration_s[,priority][,est_s]
// An optional first line of column names may reorder the columns or leave out the optional
// ones (known names: id, submit_s, gpus, duration_s, priority, est_s). Blank lines and lines
// starting with '#' are skipped. Seconds may be fractional (rounded to milliseconds);
// priority is an integer or a name (high, normal, low; default normal). The estimate the
// scheduler is told is est_s when the column is there and not empty (0 = unknown), else the
// true duration (a perfect estimate). Traces have no dependencies, lanes or reservations.
// Errors name "<file>:<line>". Reads one file; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "sim/simulate.h"

namespace gpuq::sim {

Result<std::vector<SimJob>> read_trace_csv(const std::string& path);

// The same, from text already read; `file` names it in errors.
Result<std::vector<SimJob>> parse_trace_csv(const std::string& text, const std::string& file);

}  // namespace gpuq::sim
