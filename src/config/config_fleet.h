// SPDX-License-Identifier: Apache-2.0
// Internal to the config reader (config.cc): reading the `[fleet]` table into FleetConfig,
// kept in its own file so config.cc stays small. The table's keys are checked by config.cc;
// this reads their values. Pure functions of a parsed document; thread-safe. Errors use
// config.h's form "path:line:column: what is wrong; how to fix it" (Code::kInvalidArgument).
#pragma once

#include <toml++/toml.h>

#include <string_view>

#include "base/status.h"
#include "config/config.h"

namespace gpuq::config {

// Reads `table` (nullptr when the file has no [fleet]) into `fleet`. `path` names the file.
Status read_fleet_table(const toml::table* table, std::string_view path, FleetConfig& fleet);

}  // namespace gpuq::config
