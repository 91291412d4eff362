// SPDX-License-Identifier: Apache-2.0
// ASCII case for protocol and tool text (HTTP header names, token schemes, a tool's error
// words): bytes outside A-Z are left as they are, whatever the locale. Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace gpuq {

// `text` with A-Z made a-z.
inline std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace gpuq
