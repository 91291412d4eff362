// SPDX-License-Identifier: Apache-2.0
#include "config/config_text.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpuq::config {

bool is_lane_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

bool is_gpu_name(std::string_view name) {
  return name.size() > kGpuLane.size() && name.substr(0, kGpuLane.size()) == kGpuLane &&
         std::all_of(name.begin() + kGpuLane.size(), name.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

std::string join(const std::vector<std::string_view>& words) {
  std::string text;
  for (std::string_view word : words) {
    if (!text.empty()) text += ", ";
    text += word;
  }
  return text;
}

std::string one_line(std::string_view message) {
  std::string line;
  line.reserve(message.size());
  for (char c : message) {
    switch (c) {
      case '\b': line += "\\b"; break;
      case '\t': line += "\\t"; break;
      case '\n': line += "\\n"; break;
      case '\f': line += "\\f"; break;
      case '\r': line += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          line += fmt::format("\\u{:04X}", static_cast<unsigned char>(c));
        } else {
          line += c;
        }
    }
  }
  return line;
}

std::string_view quoting_hint(std::string_view description) {
  for (std::string_view symptom : {"value type", "boolean", "integer", "floating-point"}) {
    if (description.find(symptom) != std::string_view::npos) {
      return "text values need double quotes, e.g. delay = \"10s\", policy = \"fifo\"; ";
    }
  }
  return "";
}

tl::unexpected<Error> error_at(std::string_view path, const toml::source_region& where,
                               std::string_view message) {
  return fail(Code::kInvalidArgument, fmt::format("{}:{}:{}: {}", path, where.begin.line,
                                                  where.begin.column, one_line(message)));
}

}  // namespace gpuq::config
