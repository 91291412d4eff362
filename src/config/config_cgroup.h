// SPDX-License-Identifier: Apache-2.0
// Internal to the config reader (config.cc): reading the `[cgroup]` table (containment of runs
// by cgroup v2, docs/containment.md), kept in its own file so config.cc stays small. The
// table's keys are checked by config.cc; this reads their values. Pure functions of a parsed
// document; thread-safe. Errors use config.h's form "path:line:column: what is wrong; how to
// fix it" (Code::kInvalidArgument).
#pragma once

#include <toml++/toml.h>

#include <string>
#include <string_view>

#include "base/status.h"

namespace gpuq::config {

// Reads `table` (nullptr when the file has no [cgroup]) into `root`: "off", or an absolute
// directory; left as it is (automatic) when the table or its key is missing.
Status read_cgroup_table(const toml::table* table, std::string_view path, std::string& root);

}  // namespace gpuq::config
