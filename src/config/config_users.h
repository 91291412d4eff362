// SPDX-License-Identifier: Apache-2.0
// Internal to the config reader (config.cc): reading the `[users]` table (a box many people
// share: the system socket's group, admins, fair share and per-user limits, docs/lab.md) and its
// `[users.NAME]` sub-tables (one user's limits), kept in its own file so config.cc stays small.
// This reader checks the table's keys itself (a sub-table is a user's, any other key must be a
// setting). Pure functions of a parsed document; thread-safe. Errors use config.h's form
// "path:line:column: what is wrong; how to fix it" (Code::kInvalidArgument).
#pragma once

#include <toml++/toml.h>

#include <string_view>

#include "base/status.h"
#include "config/config.h"

namespace gpuq::config {

// Reads `table` (nullptr when the file has no [users]) into `users`; settings the table leaves
// out keep their defaults (group gpuq, no admins, fair share on with a 7-day half-life, no
// limits).
Status read_users_table(const toml::table* table, std::string_view path, UsersConfig& users);

}  // namespace gpuq::config
