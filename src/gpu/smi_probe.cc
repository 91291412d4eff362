// SPDX-License-Identifier: Apache-2.0
#include "gpu/smi_probe.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>

#include "gpu/nvidia_smi.h"

namespace gpuq::gpu {
namespace {


// Calls `each(number, line)` for every non-blank line, trimmed (CRLF included), numbered from 1;
// stops at the first error.
template <class Fn>
Status for_each_line(std::string_view output, Fn each) {
  int number = 0;
  while (!output.empty()) {
    size_t newline = output.find('\n');
    std::string_view line = trim(output.substr(0, newline));
    output = newline == std::string_view::npos ? std::string_view{} : output.substr(newline + 1);
    ++number;
    if (line.empty()) continue;
    if (auto status = each(number, line); !status) return status;
  }
  return ok();
}

// The comma-separated columns of a line, trimmed. None of these queries has a column that may
// contain a comma (no GPU names), so a plain split is exact.
std::vector<std::string_view> split_columns(std::string_view line) {
  std::vector<std::string_view> columns;
  while (true) {
    size_t comma = line.find(',');
    columns.push_back(trim(line.substr(0, comma)));
    if (comma == std::string_view::npos) return columns;
    line.remove_prefix(comma + 1);
  }
}

std::optional<int> parse_percent(std::string_view text) {
  if (is_unavailable_value(text)) return -1;
  auto value = parse_non_negative<int>(text);
  if (!value || *value > 100) return std::nullopt;
  return value;
}

// Degrees C: a whole number, or -1 for a value nvidia-smi cannot report.
std::optional<int> parse_temperature(std::string_view text) {
  if (is_unavailable_value(text)) return -1;
  auto value = parse_non_negative<int>(text);
  if (!value || *value > 1000) return std::nullopt;
  return value;
}

// Watts, with decimals ("287.53"), or -1 for a value nvidia-smi cannot report.
std::optional<double> parse_watts(std::string_view text) {
  if (is_unavailable_value(text)) return -1.0;
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !(value >= 0) || value > 1e6) {
    return std::nullopt;
  }
  return value;
}

tl::unexpected<Error> corrupt_line(std::string_view query, int number, std::string_view line,
                                   std::string_view why, std::string_view expected) {
  return fail(Code::kCorruption,
              fmt::format("nvidia-smi {} output line {}: {}: \"{}\" (expected \"{}\")", query,
                          number, why, line, expected));
}

constexpr std::string_view kGpuQueryShort = "--query-gpu";
constexpr std::string_view kGpuExpected =
    "index, uuid, memory.used MiB, utilization.gpu %, temperature.gpu C, power.draw W";
constexpr std::string_view kAppsQueryShort = "--query-compute-apps";
constexpr std::string_view kAppsExpected = "gpu_uuid, pid, used_memory MiB";

std::string describe_exit(const os::CommandResult& result) {
  return result.signal != 0 ? fmt::format("killed by signal {}", result.signal)
                            : fmt::format("exit {}", result.exit_code);
}

class SmiProbe final : public GpuProbe {
 public:
  explicit SmiProbe(CommandFn run) : run_(std::move(run)) {}

  std::string name() const override { return "nvidia-smi"; }

  Result<ProbeSample> sample() override {
    auto gpu_text = query(kSmiProbeGpuQuery);
    if (!gpu_text) return tl::unexpected(gpu_text.error());
    auto gpus = parse_smi_probe_gpus(*gpu_text);
    if (!gpus) return tl::unexpected(gpus.error());
    auto apps_text = query(kSmiProbeAppsQuery);
    if (!apps_text) return tl::unexpected(apps_text.error());
    auto apps = parse_smi_compute_apps(*apps_text);
    if (!apps) return tl::unexpected(apps.error());
    return merge_smi_probe(*gpus, *apps);
  }

 private:
  // Runs one query and returns its stdout, or why it has none.
  Result<std::string> query(std::string_view arguments) {
    std::string smi = nvidia_smi_program();
    std::string command = fmt::format("{} {}", smi, arguments);
    auto result =
        run_({smi, std::string(arguments), std::string(kNvidiaSmiFormat)}, kNvidiaSmiTimeout);
    if (!result) {
      return fail(Code::kUnavailable, fmt::format("{}: {}", command, result.error().message));
    }
    if (result->timed_out) {
      // A stuck one holds one of the few slots for stuck helpers (os/stuck_helpers.h); once
      // they are all taken, the next sample fails at once without starting nvidia-smi.
      return fail(Code::kUnavailable,
                  fmt::format("{}: no answer within {}{}", command,
                              format_duration(kNvidiaSmiTimeout),
                              result->stuck ? ", and SIGKILL did not end it: it is stuck in the "
                                              "kernel (a wedged driver?)"
                                            : ""));
    }
    if (result->exit_code != 0 || result->signal != 0) {
      std::string said = first_line(result->err);
      if (said.empty()) said = first_line(result->out);  // nvidia-smi often reports on stdout
      return fail(Code::kUnavailable,
                  fmt::format("{} failed ({}): {}", command, describe_exit(*result),
                              said.empty() ? "no output" : said));
    }
    return std::move(result->out);
  }

  CommandFn run_;
};

}  // namespace

Result<std::vector<SmiGpuRow>> parse_smi_probe_gpus(std::string_view output) {
  std::vector<SmiGpuRow> rows;
  std::set<int> indices;
  std::set<std::string, std::less<>> uuids;
  auto status = for_each_line(output, [&](int number, std::string_view line) -> Status {
    auto bad = [&](std::string_view why) {
      return corrupt_line(kGpuQueryShort, number, line, why, kGpuExpected);
    };
    std::vector<std::string_view> columns = split_columns(line);
    if (columns.size() != 6) return bad("not 6 comma-separated columns");
    auto index = parse_non_negative<int>(columns[0]);
    if (!index) return bad("bad GPU index");
    if (columns[1].empty()) return bad("empty UUID");
    auto used = parse_mib(columns[2]);
    if (!used) return bad("bad memory.used");
    auto utilization = parse_percent(columns[3]);
    if (!utilization) return bad("bad utilization.gpu");
    auto temperature = parse_temperature(columns[4]);
    if (!temperature) return bad("bad temperature.gpu");
    auto power = parse_watts(columns[5]);
    if (!power) return bad("bad power.draw");
    if (!indices.insert(*index).second) return bad("duplicate GPU index");
    if (!uuids.insert(std::string(columns[1])).second) return bad("duplicate GPU UUID");
    rows.push_back(
        SmiGpuRow{*index, std::string(columns[1]), *used, *utilization, *temperature, *power});
    return ok();
  });
  if (!status) return tl::unexpected(status.error());
  return rows;
}

Result<std::vector<SmiComputeApp>> parse_smi_compute_apps(std::string_view output) {
  std::vector<SmiComputeApp> apps;
  auto status = for_each_line(output, [&](int number, std::string_view line) -> Status {
    if (line == "No running processes found") return ok();
    auto bad = [&](std::string_view why) {
      return corrupt_line(kAppsQueryShort, number, line, why, kAppsExpected);
    };
    std::vector<std::string_view> columns = split_columns(line);
    if (columns.size() != 3) return bad("not 3 comma-separated columns");
    if (columns[0].empty()) return bad("empty GPU UUID");
    auto pid = parse_non_negative<int>(columns[1]);
    if (!pid || *pid == 0) return bad("bad pid");
    auto used = parse_mib(columns[2]);
    if (!used) return bad("bad used_memory");
    apps.push_back(SmiComputeApp{std::string(columns[0]), *pid, *used, number});
    return ok();
  });
  if (!status) return tl::unexpected(status.error());
  return apps;
}

Result<ProbeSample> merge_smi_probe(const std::vector<SmiGpuRow>& gpus,
                                    const std::vector<SmiComputeApp>& apps) {
  ProbeSample sample;
  std::map<std::string, size_t, std::less<>> by_uuid;
  std::vector<const SmiGpuRow*> ordered;
  for (const SmiGpuRow& row : gpus) ordered.push_back(&row);
  std::sort(ordered.begin(), ordered.end(),
            [](const SmiGpuRow* a, const SmiGpuRow* b) { return a->index < b->index; });
  for (const SmiGpuRow* row : ordered) {
    by_uuid[row->uuid] = sample.gpus.size();
    sample.gpus.push_back(GpuSample{row->index, row->memory_used_mib, row->utilization,
                                    row->temperature_c, row->power_w, {}});
  }
  for (const SmiComputeApp& app : apps) {
    auto it = by_uuid.find(app.gpu_uuid);
    if (it == by_uuid.end()) {
      return fail(Code::kCorruption,
                  fmt::format("nvidia-smi {} output line {}: process {} is on GPU {}, which "
                              "nvidia-smi {} does not list; the two queries disagree",
                              kAppsQueryShort, app.line, app.pid, app.gpu_uuid, kGpuQueryShort));
    }
    sample.gpus[it->second].processes.push_back(GpuProcess{app.pid, app.used_memory_mib});
  }
  return sample;
}

std::unique_ptr<GpuProbe> make_smi_probe(CommandFn run) {
  return std::make_unique<SmiProbe>(std::move(run));
}

}  // namespace gpuq::gpu
