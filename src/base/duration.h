// SPDX-License-Identifier: Apache-2.0
// Durations as people write and read them: "90s", "3m12s", "2h30m", "1d", "250ms", "1.5h".
// Parsing is strict (an unknown unit or trailing text is an error that quotes the text, says
// what is wrong and the accepted forms); decimals are read exactly and rounded to milliseconds.
// Formatting keeps the two most significant units ("3m12s", "1h05m", "2d03h").
// Pure functions, thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace gpuq {

using Millis = std::chrono::milliseconds;

// Parses "250ms", "45s", "3m", "3m12s", "2h30m", "1d12h", "1.5h", "0.3s" or a bare number of
// seconds ("90", "2.5"), each number rounded to the nearest millisecond of its unit.
Result<Millis> parse_duration(std::string_view text);

// Formats a non-negative duration for people; negative values are shown as "-" + magnitude.
std::string format_duration(Millis duration);

// The exact text of a non-negative duration, as a setting is written: every non-zero unit,
// largest first ("30d", "1h30m", "2m0s" is "2m", "1500ms" is "1s500ms"); parse_duration reads
// it back to the same value. "0s" for zero.
std::string format_duration_exact(Millis duration);

}  // namespace gpuq
