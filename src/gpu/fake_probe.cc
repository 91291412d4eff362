// SPDX-License-Identifier: Apache-2.0
#include "gpu/fake_probe.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "base/json_depth.h"

namespace gpuq::gpu {
namespace {

using nlohmann::json;

constexpr std::string_view kExpectedForm =
    R"({"gpus":[{"index":0,"memory_used_mib":900,"utilization":0,)"
    R"("processes":[{"pid":123,"used_memory_mib":900}]}]})";

// The file is 5 levels deep (the state, "gpus", a GPU, "processes", a process); deeper text is
// refused before parsing, since a deep value quoted in a message (dump()) recurses per level.
constexpr int kMaxStateDepth = 16;
// How much of a wrong value a message quotes.
constexpr size_t kMaxQuotedValue = 40;

ProbeSample idle(int gpu_count) {
  ProbeSample sample;
  for (int index = 0; index < gpu_count; ++index) {
    GpuSample gpu;
    gpu.index = index;
    gpu.utilization = 0;
    sample.gpus.push_back(std::move(gpu));
  }
  return sample;
}

// An integer JSON value that fits in int64_t; floats, booleans and strings are not integers.
std::optional<int64_t> as_integer(const json& value) {
  if (value.is_number_unsigned()) {
    auto unsigned_value = value.get<uint64_t>();
    if (unsigned_value > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(unsigned_value);
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  return std::nullopt;
}

// Checks one object's keys, its fields and their ranges; the first problem becomes an Error
// naming the file, the field's path (gpus[1].processes[0].pid) and the form expected.
class Reader {
 public:
  Reader(std::string_view source, int gpu_count) : source_(source), gpu_count_(gpu_count) {}

  tl::unexpected<Error> bad(std::string_view what) const {
    return fail(Code::kInvalidArgument,
                fmt::format("{} file {}: {}; write it as {} ({})", kFakeGpuStateEnv, source_, what,
                            kExpectedForm,
                            gpu_count_ > 0 ? fmt::format("GPU indices 0..{}", gpu_count_ - 1)
                                           : std::string("this fake has no GPUs")));
  }

  Status only_keys(const json& object, std::string_view path,
                   std::initializer_list<std::string_view> known) const {
    for (const auto& [key, value] : object.items()) {
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        return bad(fmt::format("{} has an unknown key \"{}\"", path, key));
      }
    }
    return ok();
  }

  // The integer at object[key] within [low, high], `fallback` when the key is absent.
  Result<int64_t> integer(const json& object, std::string_view path, const char* key, int64_t low,
                          int64_t high, std::optional<int64_t> fallback) const {
    auto found = object.find(key);
    if (found == object.end()) {
      if (fallback) return *fallback;
      return bad(fmt::format("{} has no \"{}\"", path, key));
    }
    auto value = as_integer(*found);
    if (!value) {
      std::string quoted = found->dump(-1, ' ', /*ensure_ascii=*/true);  // cut anywhere
      if (quoted.size() > kMaxQuotedValue) quoted = quoted.substr(0, kMaxQuotedValue) + "...";
      return bad(fmt::format("{}.{} is {}, not an integer", path, key, quoted));
    }
    if (*value < low || *value > high) {
      std::string range =
          high == INT64_MAX ? fmt::format("at least {}", low) : fmt::format("{}..{}", low, high);
      return bad(fmt::format("{}.{} is {}, outside {}", path, key, *value, range));
    }
    return *value;
  }

  // The number (integer or with decimals) at object[key] within [low, high], `fallback` when
  // the key is absent.
  Result<double> number(const json& object, std::string_view path, const char* key, double low,
                         double high, double fallback) const {
    auto found = object.find(key);
    if (found == object.end()) return fallback;
    if (!found->is_number()) {
      std::string quoted = found->dump(-1, ' ', /*ensure_ascii=*/true);
      if (quoted.size() > kMaxQuotedValue) quoted = quoted.substr(0, kMaxQuotedValue) + "...";
      return bad(fmt::format("{}.{} is {}, not a number", path, key, quoted));
    }
    const double value = found->get<double>();
    if (!(value >= low && value <= high)) {
      return bad(fmt::format("{}.{} is {}, outside {}..{}", path, key, value, low, high));
    }
    return value;
  }

  Result<GpuProcess> process(const json& entry, std::string_view path) const {
    if (!entry.is_object()) return bad(fmt::format("{} is not an object", path));
    if (auto status = only_keys(entry, path, {"pid", "used_memory_mib"}); !status) {
      return tl::unexpected(status.error());
    }
    auto pid = integer(entry, path, "pid", 1, INT_MAX, std::nullopt);
    if (!pid) return tl::unexpected(pid.error());
    auto used = integer(entry, path, "used_memory_mib", 0, INT64_MAX, 0);
    if (!used) return tl::unexpected(used.error());
    return GpuProcess{static_cast<int>(*pid), *used};
  }

  Result<GpuSample> gpu(const json& entry, std::string_view path) const {
    if (!entry.is_object()) return bad(fmt::format("{} is not an object", path));
    if (auto status =
            only_keys(entry, path, {"index", "memory_used_mib", "utilization", "temperature_c",
                                    "power_w", "processes"});
        !status) {
      return tl::unexpected(status.error());
    }
    auto index = integer(entry, path, "index", 0, gpu_count_ - 1, std::nullopt);
    if (!index) return tl::unexpected(index.error());
    auto used = integer(entry, path, "memory_used_mib", 0, INT64_MAX, 0);
    if (!used) return tl::unexpected(used.error());
    auto utilization = integer(entry, path, "utilization", -1, 100, 0);
    if (!utilization) return tl::unexpected(utilization.error());
    auto temperature = integer(entry, path, "temperature_c", -1, 1000, -1);
    if (!temperature) return tl::unexpected(temperature.error());
    auto power = number(entry, path, "power_w", -1, 1e6, -1);
    if (!power) return tl::unexpected(power.error());
    GpuSample sample;
    sample.index = static_cast<int>(*index);
    sample.memory_used_mib = *used;
    sample.utilization = static_cast<int>(*utilization);
    sample.temperature_c = static_cast<int>(*temperature);
    sample.power_w = *power;
    if (auto processes = entry.find("processes"); processes != entry.end()) {
      if (!processes->is_array()) return bad(fmt::format("{}.processes is not an array", path));
      for (size_t i = 0; i < processes->size(); ++i) {
        auto process = this->process((*processes)[i], fmt::format("{}.processes[{}]", path, i));
        if (!process) return tl::unexpected(process.error());
        sample.processes.push_back(*process);
      }
    }
    return sample;
  }

  Result<ProbeSample> state(const json& root) const {
    if (!root.is_object()) return bad("the top level is not an object");
    if (auto status = only_keys(root, "the top level", {"gpus"}); !status) {
      return tl::unexpected(status.error());
    }
    auto gpus = root.find("gpus");
    if (gpus == root.end()) return bad("there is no \"gpus\" list");
    if (!gpus->is_array()) return bad("\"gpus\" is not a list");
    ProbeSample sample = idle(gpu_count_);
    std::set<int> seen;
    for (size_t i = 0; i < gpus->size(); ++i) {
      std::string path = fmt::format("gpus[{}]", i);
      auto gpu = this->gpu((*gpus)[i], path);
      if (!gpu) return tl::unexpected(gpu.error());
      if (!seen.insert(gpu->index).second) {
        return bad(fmt::format("{} lists GPU {} a second time", path, gpu->index));
      }
      sample.gpus[gpu->index] = std::move(*gpu);
    }
    return sample;
  }

 private:
  std::string_view source_;
  int gpu_count_;
};

// The file's text, nothing when it does not exist, or why it cannot be read.
Result<std::optional<std::string>> read_state_file(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    if (errno == ENOENT) return std::optional<std::string>();
    return errno_error(fmt::format("{} file {}", kFakeGpuStateEnv, path));
  }
  std::string text;
  char buffer[4096];
  size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, file)) > 0) text.append(buffer, got);
  bool failed = std::ferror(file) != 0;
  int error = errno;
  std::fclose(file);
  if (failed) return errno_error(fmt::format("{} file {}", kFakeGpuStateEnv, path), error);
  return std::optional<std::string>(std::move(text));
}

class FakeProbe final : public GpuProbe {
 public:
  explicit FakeProbe(int gpu_count) : gpu_count_(gpu_count) {}

  std::string name() const override { return "fake"; }

  Result<ProbeSample> sample() override {
    const char* path = std::getenv(std::string(kFakeGpuStateEnv).c_str());
    if (path == nullptr || *path == '\0') return idle(gpu_count_);
    auto text = read_state_file(path);
    if (!text) return tl::unexpected(text.error());
    if (!*text) return idle(gpu_count_);
    return parse_fake_gpu_state(**text, gpu_count_, path);
  }

 private:
  int gpu_count_;
};

}  // namespace

Result<ProbeSample> parse_fake_gpu_state(std::string_view text, int gpu_count,
                                         std::string_view source) {
  Reader reader(source, gpu_count);
  if (json_nesting_beyond(text, kMaxStateDepth)) {
    return reader.bad(fmt::format("the text nests more than {} levels deep", kMaxStateDepth));
  }
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& error) {
    // A parse_error's what() carries the position: "[json.exception.parse_error.101] parse
    // error at line 2, column 7: syntax error ..."; a number too large for a double is an
    // out_of_range that quotes the number: "... number overflow parsing '1e400'".
    return reader.bad(fmt::format("not valid JSON ({})", error.what()));
  }
  try {
    return reader.state(root);
  } catch (const json::exception& error) {  // not expected: the reader checks types first
    return reader.bad(error.what());
  }
}

std::unique_ptr<GpuProbe> make_fake_probe(int gpu_count) {
  return std::make_unique<FakeProbe>(gpu_count);
}

}  // namespace gpuq::gpu
