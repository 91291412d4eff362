// SPDX-License-Identifier: Apache-2.0
// Wall-clock instants as stored and shown by gpuq: milliseconds since the Unix epoch, and
// their RFC 3339 text in UTC ("2026-11-29T10:55:36.123Z"). Pure, thread-safe.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "base/status.h"

namespace gpuq {

// Milliseconds since the Unix epoch, read from the system clock.
int64_t wall_now_ms();

// "2026-11-29T10:55:36.123Z"; 0 renders as "".
std::string format_rfc3339(int64_t epoch_ms);

// Parses "2026-11-29T10:55:36Z", with optional fraction and a "Z" or "+HH:MM" offset, also with
// a space for the "T"; returns ms since the epoch.
Result<int64_t> parse_rfc3339(std::string_view text);

// a + b, held at the int64 limits instead of overflowing: an instant plus a duration that came
// from a request or the store must never wrap around into the past.
inline int64_t saturating_add(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) {
    return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return sum;
}

}  // namespace gpuq
