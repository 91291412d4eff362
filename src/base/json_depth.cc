// SPDX-License-Identifier: Apache-2.0
#include "base/json_depth.h"

namespace gpuq {

std::optional<size_t> json_nesting_beyond(std::string_view text, int max_depth) {
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      // Skips the string, escapes included; an unterminated one runs to the end.
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

}  // namespace gpuq
