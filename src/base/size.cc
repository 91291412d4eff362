#include "base/size.h"

#include <charconv>
#include <fmt/format.h>

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
  auto bad = [&] {
    return fail(Code::kInvalidArgument,
                fmt::format("bad size '{}': write a whole number and a unit, e.g. \"2GiB\", "
                            "\"512MiB\", \"100MB\" (KiB/MiB/GiB/TiB are powers of 1024, KB/MB/GB/TB "
                            "of 1000; no unit means bytes)",
                            text.substr(0, 40)));
  };
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return bad();
  int64_t count = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + digits, count);
  if (ec != std::errc() || end != text.data() + digits) return bad();
  std::string_view unit = text.substr(digits);
  int64_t factor = unit.empty() ? 1 : 0;
  for (const Unit& u : kUnits) {
    if (unit == u.name) factor = u.factor;
  }
  if (factor == 0) return bad();
  if (count > kMaxSize / factor) {
    return fail(Code::kInvalidArgument, fmt::format("size '{}' is too large", text.substr(0, 40)));
  }
  return count * factor;
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
