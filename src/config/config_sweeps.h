// SPDX-License-Identifier: Apache-2.0
// Internal to the config reader (config.cc): reading the `[sweeps]` table (job arrays and
// grids, docs/sweeps.md). The table's keys are checked by config.cc; this reads their values.
// Pure functions of a parsed document; thread-safe. Errors use config.h's form
// "path:line:column: what is wrong; how to fix it" (Code::kInvalidArgument).
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <string_view>

#include "base/status.h"

namespace gpuq::config {

// Reads `table` ([sweeps], nullptr when missing) into `max_elements`: a whole number from 1 to
// kMostSweepElements; left as it is when the table or its key is missing.
Status read_sweeps_table(const toml::table* table, std::string_view path, int64_t& max_elements);

}  // namespace gpuq::config
