// SPDX-License-Identifier: Apache-2.0
#include "base/duration.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <utility>
#include <fmt/format.h>

#include "base/decimal.h"

namespace gpuq {
namespace {

// A hundred years: longer is a typo, and far longer would overflow int64 milliseconds.
constexpr int64_t kMaxMillis = int64_t{36'500} * 86'400'000;

constexpr std::string_view kForms =
    "use forms like 250ms, 45s, 1.5h, 3m12s, 2h30m, 1d or a number of seconds";

// Returns the length of a unit in milliseconds, or 0 when `unit` is not a unit.
int64_t unit_millis(std::string_view unit) {
  if (unit == "ms") return 1;
  if (unit == "s") return 1000;
  if (unit == "m") return 60'000;
  if (unit == "h") return 3'600'000;
  if (unit == "d") return 86'400'000;
  return 0;
}

}  // namespace

Result<Millis> parse_duration(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return fail(Code::kInvalidArgument,
                fmt::format("bad duration '{}': {}; {}", text, why, kForms));
  };
  if (text.empty()) return bad("it is empty");
  const std::string_view too_large = "it is too large (at most 36500d)";
  int64_t total = 0;
  size_t i = 0;
  int64_t last_unit = INT64_MAX;
  while (i < text.size()) {
    Decimal number;
    size_t taken = read_decimal(text.substr(i), number);
    if (taken == 0) {
      if (i < text.size() && text[i] >= '0' && text[i] <= '9') return bad(too_large);
      if (i == 0) return bad("it does not start with a number");
      bool printable = std::all_of(text.begin() + static_cast<std::ptrdiff_t>(i), text.end(),
                                   [](char c) { return std::isprint(static_cast<unsigned char>(c)) != 0; });
      return bad(printable ? fmt::format("expected a number at '{}'", text.substr(i))
                           : fmt::format("expected a number after '{}'", text.substr(0, i)));
    }
    std::string_view written = text.substr(i, taken);
    i += taken;
    size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string_view unit = text.substr(unit_start, i - unit_start);
    if (unit.empty() && i < text.size()) {
      unsigned char c = static_cast<unsigned char>(text[i]);
      return bad(std::isprint(c) ? fmt::format("unexpected '{}' after {}", text.substr(i, 1), written)
                                 : fmt::format("unexpected character {:#04x} after {}", c, written));
    }
    if (unit.empty() && unit_start != taken) {
      return bad(fmt::format("{} has no unit (ms, s, m, h or d)", written));
    }
    // A bare number, alone, is seconds: "90", "1.5".
    int64_t millis = unit.empty() ? 1000 : unit_millis(unit);
    if (millis == 0) return bad(fmt::format("unknown unit '{}' (ms, s, m, h or d)", unit));
    if (millis >= last_unit) return bad("units must go from largest to smallest");
    last_unit = millis;
    auto value = scale_decimal(number, millis, kMaxMillis - total);
    if (!value) return bad(too_large);
    total += *value;
  }
  return Millis(total);
}

std::string format_duration(Millis duration) {
  // The magnitude is taken in unsigned arithmetic, where the most negative count has one too,
  // and the sign goes into the same fmt::format call as the digits. (Prefixing "-" to a string
  // also made GCC 12 at -O3 report a false -Wrestrict inside std::string.)
  int64_t count = duration.count();
  std::string_view sign = count < 0 ? "-" : "";
  uint64_t ms =
      count < 0 ? uint64_t{0} - static_cast<uint64_t>(count) : static_cast<uint64_t>(count);
  if (ms < 1000) return fmt::format("{}{}ms", sign, ms);
  uint64_t s = ms / 1000;
  if (s < 60) return fmt::format("{}{}s", sign, s);
  uint64_t m = s / 60;
  if (m < 60) return fmt::format("{}{}m{:02}s", sign, m, s % 60);
  uint64_t h = m / 60;
  if (h < 24) return fmt::format("{}{}h{:02}m", sign, h, m % 60);
  return fmt::format("{}{}d{:02}h", sign, h / 24, h % 24);
}

std::string format_duration_exact(Millis duration) {
  int64_t left = std::max<int64_t>(duration.count(), 0);
  if (left == 0) return "0s";
  constexpr std::pair<int64_t, std::string_view> kUnits[] = {
      {86'400'000, "d"}, {3'600'000, "h"}, {60'000, "m"}, {1000, "s"}, {1, "ms"}};
  std::string out;
  for (const auto& [millis, unit] : kUnits) {
    if (left >= millis) {
      out += fmt::format("{}{}", left / millis, unit);
      left %= millis;
    }
  }
  return out;
}

}  // namespace gpuq
