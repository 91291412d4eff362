// SPDX-License-Identifier: Apache-2.0
// Non-negative decimal numbers as people write them in durations and sizes: "12", "1.5", ".25".
// Read without floating point: the whole part and up to nine digits of fraction (further digits
// are dropped), then scaled by a unit and rounded to the nearest whole one, so "0.3s" is exactly
// 300 ms and "1.5GiB" exactly 1610612736 bytes. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace gpuq {

struct Decimal {
  int64_t whole = 0;
  int64_t billionths = 0;  // the fraction, in units of 1e-9
  bool has_point = false;
};

// Reads a decimal number at the start of `text` (digits, optionally a '.' and more digits, at
// least one digit in all). Returns how many characters it took: 0 when there is none, and 0 too
// for a whole part of more than 15 digits (too large for any duration or size here).
size_t read_decimal(std::string_view text, Decimal& out);

// value × factor, rounded to the nearest integer (halves up); nullopt when it would pass `max`.
std::optional<int64_t> scale_decimal(const Decimal& value, int64_t factor, int64_t max);

}  // namespace gpuq
