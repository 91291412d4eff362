// SPDX-License-Identifier: Apache-2.0
#include "base/decimal.h"

namespace gpuq {

size_t read_decimal(std::string_view text, Decimal& out) {
  out = Decimal{};
  size_t i = 0;
  size_t whole_digits = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    if (++whole_digits > 15) return 0;
    out.whole = out.whole * 10 + (text[i] - '0');
    ++i;
  }
  size_t fraction_digits = 0;
  if (i < text.size() && text[i] == '.') {
    out.has_point = true;
    ++i;
    int64_t place = 100'000'000;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      out.billionths += (text[i] - '0') * place;
      place /= 10;
      ++fraction_digits;
      ++i;
    }
  }
  if (whole_digits + fraction_digits == 0) return 0;
  return i;
}

std::optional<int64_t> scale_decimal(const Decimal& value, int64_t factor, int64_t max) {
  if (factor <= 0 || value.whole > max / factor) return std::nullopt;
  int64_t whole = value.whole * factor;
  // billionths × factor may pass int64 for large factors (TiB, days): done in 128 bits.
  __int128 part = static_cast<__int128>(value.billionths) * factor;
  int64_t fraction = static_cast<int64_t>((part + 500'000'000) / 1'000'000'000);
  if (fraction > max - whole) return std::nullopt;
  return whole + fraction;
}

}  // namespace gpuq
