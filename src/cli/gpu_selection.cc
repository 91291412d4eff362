// SPDX-License-Identifier: Apache-2.0
#include "cli/gpu_selection.h"

#include <fmt/format.h>

#include <charconv>
#include <optional>
#include <set>

namespace gpuq::cli {

Status check_gpu_selection(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return fail(Code::kInvalidArgument,
                fmt::format("bad --gpus '{}': {}; use auto, none, fake:N or device indices like "
                            "0,2,3",
                            text, why));
  };
  auto number = [](std::string_view word) -> std::optional<int> {
    int value = 0;
    auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
    if (word.empty() || ec != std::errc() || end != word.data() + word.size()) return std::nullopt;
    return value;
  };
  if (text == "auto" || text == "none") return ok();
  if (text.starts_with("fake:")) {
    auto n = number(text.substr(5));
    if (!n || *n < 1 || *n > 1024) return bad("fake:N needs a count from 1 to 1024");
    return ok();
  }
  std::set<int> seen;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string_view word =
        text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    auto index = number(word);
    if (!index || *index < 0) return bad(fmt::format("'{}' is not a device index", word));
    if (!seen.insert(*index).second) return bad(fmt::format("device {} is named twice", *index));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return ok();
}

}  // namespace gpuq::cli
