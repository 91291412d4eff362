// SPDX-License-Identifier: Apache-2.0
#include "base/api_version.h"

#include <charconv>

namespace gpuq {

std::optional<int> parse_api_version(std::string_view text) {
  int version = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), version);
  if (ec != std::errc() || end != text.data() + text.size() || version < 1) return std::nullopt;
  return version;
}

}  // namespace gpuq
