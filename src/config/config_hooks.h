// SPDX-License-Identifier: Apache-2.0
// Internal to the config reader (config.cc): reading the `[[hook]]` array of tables into
// HookConfig values, kept in its own file so config.cc stays small. Pure functions of a parsed
// document; thread-safe. Errors use config.h's form "path:line:column: what is wrong; how to fix
// it" (Code::kInvalidArgument).
#pragma once

#include <toml++/toml.h>

#include <string_view>
#include <vector>

#include "base/status.h"
#include "config/config.h"
#include "config/config_text.h"

namespace gpuq::config {

// The top-level key of the hook tables: `[[hook]]`.
inline constexpr std::string_view kHookKey = "hook";

// The name of a hook that gives none: "url-" or "command-" and a digest of the target, so it
// stays the same when hooks are reordered and does not show a token the target may hold.
std::string default_hook_name(const HookConfig& hook);

// Reads `node` (the value of the top-level `hook` key, or nullptr when the file has none) into
// `hooks`, in file order. `path` only names the file in messages.
Status read_hook_tables(const toml::node* node, std::string_view path,
                        std::vector<HookConfig>& hooks);

}  // namespace gpuq::config
