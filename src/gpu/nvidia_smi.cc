// SPDX-License-Identifier: Apache-2.0
#include "gpu/nvidia_smi.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <set>

#include "base/ascii.h"

namespace gpuq::gpu {

std::string_view trim(std::string_view text) {
  constexpr std::string_view kWhitespace = " \t\r\n\v\f";
  size_t begin = text.find_first_not_of(kWhitespace);
  if (begin == std::string_view::npos) return {};
  size_t end = text.find_last_not_of(kWhitespace);
  return text.substr(begin, end - begin + 1);
}

bool is_unavailable_value(std::string_view text) {
  return text == "[N/A]" || text == "[Not Supported]" || text == "N/A";
}

std::optional<int64_t> parse_mib(std::string_view text) {
  if (is_unavailable_value(text)) return int64_t{0};
  return parse_non_negative<int64_t>(text);
}

namespace {

bool contains_any(std::string_view text, std::initializer_list<std::string_view> needles) {
  std::string haystack = ascii_lower(text);
  return std::any_of(needles.begin(), needles.end(), [&](std::string_view needle) {
    return haystack.find(needle) != std::string::npos;
  });
}


// The five columns of one line. The model name sits in the middle so that a name containing a
// comma still splits correctly: index and uuid are taken from the left, memory from the right.
struct Columns {
  std::string_view index, uuid, name, total, used;
};

std::optional<Columns> inventory_columns(std::string_view line) {
  size_t first = line.find(',');
  if (first == std::string_view::npos) return std::nullopt;
  size_t second = line.find(',', first + 1);
  size_t last = line.rfind(',');
  if (second == std::string_view::npos || last <= second) return std::nullopt;
  size_t before_last = line.rfind(',', last - 1);
  if (before_last <= second) return std::nullopt;
  return Columns{trim(line.substr(0, first)), trim(line.substr(first + 1, second - first - 1)),
                 trim(line.substr(second + 1, before_last - second - 1)),
                 trim(line.substr(before_last + 1, last - before_last - 1)),
                 trim(line.substr(last + 1))};
}

tl::unexpected<Error> corrupt_line(int number, std::string_view line, std::string_view why) {
  return fail(Code::kCorruption,
              fmt::format("nvidia-smi output line {}: {}: \"{}\" (expected \"index, uuid, "
                          "name, memory.total MiB, memory.used MiB\")",
                          number, why, line));
}

Result<Resource> parse_line(int number, std::string_view line) {
  auto columns = inventory_columns(line);
  if (!columns) return corrupt_line(number, line, "not 5 comma-separated columns");
  auto index = parse_non_negative<int>(columns->index);
  if (!index) return corrupt_line(number, line, "bad GPU index");
  if (columns->uuid.empty()) return corrupt_line(number, line, "empty UUID");
  if (columns->name.empty()) return corrupt_line(number, line, "empty GPU name");
  auto total = parse_mib(columns->total);
  if (!total) return corrupt_line(number, line, "bad memory.total");
  auto used = parse_mib(columns->used);
  if (!used) return corrupt_line(number, line, "bad memory.used");

  Resource gpu;
  gpu.name = fmt::format("gpu{}", *index);
  gpu.index = *index;
  gpu.uuid = std::string(columns->uuid);
  gpu.model = std::string(columns->name);
  gpu.memory_total_mib = *total;
  gpu.memory_used_mib = *used;
  return gpu;
}

}  // namespace

Result<std::vector<Resource>> parse_nvidia_smi_gpus(std::string_view output) {
  std::vector<Resource> gpus;
  std::set<int> seen;
  int number = 0;
  while (!output.empty()) {
    size_t newline = output.find('\n');
    std::string_view raw = output.substr(0, newline);
    output = newline == std::string_view::npos ? std::string_view{} : output.substr(newline + 1);
    ++number;
    std::string_view line = trim(raw);
    if (line.empty()) continue;
    auto gpu = parse_line(number, line);
    if (!gpu) return tl::unexpected(gpu.error());
    if (!seen.insert(*gpu->index).second) return corrupt_line(number, line, "duplicate GPU index");
    gpus.push_back(std::move(*gpu));
  }
  return gpus;
}

bool is_driver_missing_text(std::string_view text) {
  return contains_any(text, {"couldn't communicate with the nvidia driver", "nvidia-smi has failed",
                             "failed to initialize nvml", "nvml shared library not found",
                             "driver/library version mismatch"});
}

bool is_no_devices_text(std::string_view text) {
  return contains_any(text, {"no devices were found"});
}

std::string nvidia_smi_program() {
  const char* configured = std::getenv("GPUQ_NVIDIA_SMI");
  return configured != nullptr && *configured != '\0' ? configured : "nvidia-smi";
}

std::string first_line(std::string_view text) {
  while (!text.empty()) {
    size_t newline = text.find('\n');
    std::string_view line = trim(text.substr(0, newline));
    if (!line.empty()) return std::string(line);
    if (newline == std::string_view::npos) break;
    text.remove_prefix(newline + 1);
  }
  return {};
}

}  // namespace gpuq::gpu
