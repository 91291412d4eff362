// SPDX-License-Identifier: Apache-2.0
// Sizes in bytes as people write them in config.toml: "2GiB", "1.5GiB", "512MiB", "100KB",
// "1048576". Binary units (KiB, MiB, GiB, TiB: powers of 1024) and decimal ones (KB, MB, GB,
// TB: powers of 1000), B or no unit for bytes; the number may have decimals, and the size is
// rounded to the nearest byte. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace gpuq {

// kInvalidArgument naming the text and the accepted forms; sizes past 2^62 bytes are refused.
Result<int64_t> parse_size(std::string_view text);

// The largest binary unit that divides the size: 2147483648 -> "2GiB", 1500 -> "1500B".
std::string format_size(int64_t bytes);

}  // namespace gpuq
