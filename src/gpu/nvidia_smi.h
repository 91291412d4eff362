// SPDX-License-Identifier: Apache-2.0
// Reading what nvidia-smi prints: the GPU list of
//   nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.used
//              --format=csv,noheader,nounits
// and the texts it prints instead when there is no usable driver or no GPU.
// Pure functions over text (running nvidia-smi is the job of discovery and of the smi probe), plus
// which nvidia-smi to run; owns nothing; thread-safe.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/job.h"

namespace gpuq::gpu {

// The query arguments whose output parse_nvidia_smi_gpus reads; the column order matters.
inline constexpr std::string_view kNvidiaSmiQuery =
    "--query-gpu=index,uuid,name,memory.total,memory.used";
inline constexpr std::string_view kNvidiaSmiFormat = "--format=csv,noheader,nounits";

// nvidia-smi's documented exit codes for "no usable driver" and "no GPU".
constexpr int kNvidiaSmiExitNotFound = 6;         // "No devices were found"
constexpr int kNvidiaSmiExitDriverNotLoaded = 9;  // "couldn't communicate with the NVIDIA driver"
constexpr int kNvidiaSmiExitNoNvmlLibrary = 12;   // "NVML Shared Library Not Found"

// Parses one GPU per line into Resources named "gpu<index>" with the model and memory in MiB.
// Tolerates CRLF, surrounding whitespace, blank lines, commas inside the model name, and
// "[N/A]" / "[Not Supported]" memory (read as 0). Anything else is Code::kCorruption quoting the
// line number and the line, since a misread GPU list would place jobs on the wrong devices.
// Empty output yields an empty list.
Result<std::vector<Resource>> parse_nvidia_smi_gpus(std::string_view output);

// True for nvidia-smi's texts meaning the driver or NVML is absent or unusable, e.g. "NVIDIA-SMI
// has failed because it couldn't communicate with the NVIDIA driver", "Failed to initialize
// NVML: Driver/library version mismatch", "NVML Shared Library Not Found".
bool is_driver_missing_text(std::string_view text);

// True for "No devices were found": a driver without any GPU.
bool is_no_devices_text(std::string_view text);

// `text` without leading and trailing whitespace (CR included).
std::string_view trim(std::string_view text);

// A whole non-negative number, or nullopt for anything else (signs, spaces, overflow).
template <class Int>
std::optional<Int> parse_non_negative(std::string_view text) {
  Int value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

// True for what nvidia-smi prints for a value it cannot report: "[N/A]", "[Not Supported]".
bool is_unavailable_value(std::string_view text);

// Memory in MiB. Memory nvidia-smi cannot report (WSL, some consumer and unified-memory boards)
// reads as 0 rather than failing the whole list: the GPU itself is usable.
std::optional<int64_t> parse_mib(std::string_view text);

// The first non-blank line of `text`, trimmed: what a person needs to see of a failure.
std::string first_line(std::string_view text);

// The nvidia-smi to run: $GPUQ_NVIDIA_SMI when set and not empty, else "nvidia-smi" (from PATH).
// Read at every call, so tests may change it.
std::string nvidia_smi_program();

}  // namespace gpuq::gpu
