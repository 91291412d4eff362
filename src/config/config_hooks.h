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

namespace gpuq::config {

// The top-level key of the hook tables: `[[hook]]`.
inline constexpr std::string_view kHookKey = "hook";

// "a, b, c": the names of settings, for messages (shared with config.cc).
std::string join(const std::vector<std::string_view>& words);

// `message` on one line, as every error must be (one line of the daemon's log, of gpuq
// simulate's output): control characters, which a TOML string may hold ("a\nb") and toml++'s
// descriptions quote from the text ("saw 'i\n'"), are written as TOML escapes (\n, \t,
// \u001B). Shared with config.cc.
std::string one_line(std::string_view message);

// The name of a hook that gives none: "url-" or "command-" and a digest of the target, so it
// stays the same when hooks are reordered and does not show a token the target may hold.
std::string default_hook_name(const HookConfig& hook);

// Reads `node` (the value of the top-level `hook` key, or nullptr when the file has none) into
// `hooks`, in file order. `path` only names the file in messages.
Status read_hook_tables(const toml::node* node, std::string_view path,
                        std::vector<HookConfig>& hooks);

}  // namespace gpuq::config
