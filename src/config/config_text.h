// SPDX-License-Identifier: Apache-2.0
// Internal to the config reader (config.cc and the config_*.cc of each table): the names
// config.toml accepts for lanes, the longest delay it accepts, and the wording of its messages
// (lists of settings, hints, one-line errors at a position). Pure functions; thread-safe.
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace gpuq::config {

// The pseudo-lane meaning "any job holding GPUs" (sched::Lane::excludes).
inline constexpr std::string_view kGpuLane = "gpu";

// Lower-case letters, digits, '_' and '-': a lane's name.
bool is_lane_name(std::string_view name);
// "gpu0", "gpu12": the names of GPU resources, which a lane must not take.
bool is_gpu_name(std::string_view name);

// Longer than any sane grace, poll, retry or hook delay; keeps later arithmetic (backoff
// doubling, deadlines) far from overflow.
inline constexpr int64_t kMaxDurationMs = 30LL * 24 * 3'600'000;
inline constexpr std::string_view kMaxDurationText = "30d";

// "a, b, c": the names of settings, for messages.
std::string join(const std::vector<std::string_view>& words);

// `message` on one line, as every error must be (one line of the daemon's log, of gpuq
// simulate's output): control characters, which a TOML string may hold ("a\nb") and toml++'s
// descriptions quote from the text ("saw 'i\n'"), are written as TOML escapes (\n, \t,
// \u001B).
std::string one_line(std::string_view message);

// An invalid-argument error "PATH:LINE:COLUMN: message" (on one line) for a key or value of
// config.toml at `where`.
tl::unexpected<Error> error_at(std::string_view path, const toml::source_region& where,
                               std::string_view message);

// The usual cause of toml++'s complaints about a value (a duration or policy without quotes),
// as the start of a hint; empty when the description suggests none.
std::string_view quoting_hint(std::string_view description);

}  // namespace gpuq::config
