// SPDX-License-Identifier: Apache-2.0
#include "cli/format.h"

#include <fmt/format.h>

#include "base/duration.h"

namespace gpuq::cli {

std::string job_label(const Json& job) {
  std::string id = field_text(job, "id");
  std::string name = json_string(job, "name");
  return name.empty() ? "job " + id : fmt::format("job {} ({})", id, name);
}

std::string name_or_dash(const Json& job) {
  std::string name = json_string(job, "name");
  if (!name.empty()) return name;
  std::string fleet_id = json_string(job, "fleet_id");
  return fleet_id.empty() ? "-" : "fleet:" + fleet_id;
}

const Json* latest_run(const Json& job) {
  const Json& runs = json_array(job, "runs");
  const Json* best = nullptr;
  for (const auto& run : runs) {
    if (best == nullptr ||
        json_int(run, "number").value_or(0) >= json_int(*best, "number").value_or(0)) {
      best = &run;
    }
  }
  return best;
}

std::string run_duration(const Json& run, int64_t now_ms) {
  return span_duration(json_int(run, "started_at_ms"), json_int(run, "ended_at_ms"),
                       json_string(run, "outcome") == "running", now_ms);
}

std::string span_duration(std::optional<int64_t> started, std::optional<int64_t> ended,
                          bool running, int64_t now_ms) {
  if (!started || *started <= 0) return "-";
  int64_t end = ended && *ended > 0 ? *ended : (running ? now_ms : 0);
  if (end == 0) return "-";
  return format_duration(Millis(std::max<int64_t>(0, end - *started)));
}

std::string job_time(const Json& job, int64_t now_ms) {
  std::string state = json_string(job, "state");
  if (state == "pending" || state == "held" || state == "blocked") {
    auto submitted = json_int(job, "submitted_at_ms");
    if (!submitted || *submitted <= 0) return "-";
    return format_duration(Millis(std::max<int64_t>(0, now_ms - *submitted)));
  }
  const Json* run = latest_run(job);
  return run == nullptr ? "-" : run_duration(*run, now_ms);
}

std::string format_mib(int64_t mib) {
  if (mib < 1024) return fmt::format("{} MiB", mib);
  return fmt::format("{:.1f} GiB", static_cast<double>(mib) / 1024.0);
}

std::string format_count(int64_t n) {
  uint64_t magnitude = n < 0 ? 0 - static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
  std::string digits = std::to_string(magnitude);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string format_bytes(int64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024.0;
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < std::size(kUnits)) {
    value /= 1024.0;
    ++unit;
  }
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

std::string count_of(int64_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", format_count(n), n == 1 ? one : many);
}

std::string gpu_list(const Json& gpus) {
  if (!gpus.is_array() || gpus.empty()) return "-";
  std::string out;
  for (const auto& g : gpus) {
    if (!out.empty()) out += ',';
    out += g.is_string() ? g.get<std::string>() : json_text(g);
  }
  return out;
}

std::string reason_or_command(const Json& job) {
  std::string state = json_string(job, "state");
  std::string reason = json_string(job, "reason");
  bool reason_matters = state == "pending" || state == "held" || state == "blocked" ||
                        state == "failed" || state == "cancelled";
  if (reason_matters && !reason.empty()) return reason;
  return json_string(job, "command");
}

std::string field_text(const Json& object, std::string_view key) {
  if (!object.is_object()) return "-";
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return "-";
  if (it->is_string()) return it->get<std::string>();
  return json_text(*it);
}

std::string truncate(const std::string& text, size_t max) {
  size_t columns = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
    if (columns == max - 1 && max > 0) {
      // Keep this code point only if it is the last one.
      size_t rest = 0;
      for (size_t j = i; j < text.size(); ++j) {
        if ((static_cast<unsigned char>(text[j]) & 0xC0) != 0x80) ++rest;
      }
      if (rest <= 1) return text;
      return text.substr(0, i) + "…";
    }
    ++columns;
  }
  return text;
}

int print_body(Context& ctx, const std::string& body) {
  ctx.out() << body;
  if (body.empty() || body.back() != '\n') ctx.out() << '\n';
  return kExitOk;
}

int print_json(Context& ctx, const Json& value) {
  ctx.out() << json_text(value) << '\n';
  return kExitOk;
}

Json error_json(const std::string& ref, const CliError& error) {
  Json code = error.code.empty() ? Json(nullptr) : Json(error.code);
  return Json{{"ref", ref}, {"error", {{"code", std::move(code)}, {"message", error.message}}}};
}

}  // namespace gpuq::cli
