// SPDX-License-Identifier: Apache-2.0
#include "base/size.h"

#include <fmt/format.h>

#include "base/decimal.h"

namespace gpuq {
namespace {

struct Unit {
  std::string_view name;
  int64_t factor;
};

constexpr Unit kUnits[] = {
    {"TiB", int64_t{1} << 40}, {"GiB", int64_t{1} << 30}, {"MiB", int64_t{1} << 20},
    {"KiB", int64_t{1} << 10}, {"TB", 1'000'000'000'000}, {"GB", 1'000'000'000},
    {"MB", 1'000'000},         {"KB", 1'000},             {"B", 1},
};

constexpr int64_t kMaxSize = int64_t{1} << 62;

}  // namespace

Result<int64_t> parse_size(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return fail(Code::kInvalidArgument,
                fmt::format("bad size '{}': {}; write a number and a unit, e.g. \"2GiB\", "
                            "\"1.5GiB\", \"512MiB\", \"100MB\" (KiB/MiB/GiB/TiB are powers of "
                            "1024, KB/MB/GB/TB of 1000; no unit means bytes)",
                            text.substr(0, 40), why));
  };
  Decimal number;
  size_t taken = read_decimal(text, number);
  if (taken == 0) {
    return bad(!text.empty() && text[0] >= '0' && text[0] <= '9' ? "it is too large"
                                                                  : "it does not start with a number");
  }
  std::string_view unit = text.substr(taken);
  int64_t factor = unit.empty() ? 1 : 0;
  for (const Unit& u : kUnits) {
    if (unit == u.name) factor = u.factor;
  }
  if (factor == 0) return bad(fmt::format("unknown unit '{}'", unit.substr(0, 10)));
  auto bytes = scale_decimal(number, factor, kMaxSize);
  if (!bytes) return fail(Code::kInvalidArgument, fmt::format("size '{}' is too large", text.substr(0, 40)));
  return *bytes;
}

std::string format_size(int64_t bytes) {
  for (const Unit& u : kUnits) {
    if (u.name.size() == 3 && bytes != 0 && bytes % u.factor == 0) {
      return fmt::format("{}{}", bytes / u.factor, u.name);
    }
  }
  return fmt::format("{}B", bytes);
}

}  // namespace gpuq
