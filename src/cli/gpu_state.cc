// SPDX-License-Identifier: Apache-2.0
#include "cli/gpu_state.h"

#include <fmt/format.h>

#include "cli/format.h"

namespace gpuq::cli {
namespace {

std::string processes_text(const Json& processes) {
  std::string text;
  if (!processes.is_array()) return text;
  for (const auto& p : processes) {
    if (!text.empty()) text += ", ";
    text += fmt::format("pid {} {}", field_text(p, "pid"), json_string(p, "command"));
    if (auto mib = json_int(p, "used_memory_mib"); mib && *mib > 0) text += " (" + format_mib(*mib) + ")";
  }
  return text;
}

}  // namespace

Cell gpu_state_cell(const Json& resource) {
  std::string state = json_string(resource, "state");
  Style style = Style::kPlain;
  if (state == "free") style = Style::kGreen;
  if (state == "attention") style = Style::kRed;
  if (state == "foreign" || state == "cleaning") style = Style::kYellow;
  return Cell(state, style);
}

std::string gpu_state_note(const Json& resource) {
  std::string state = json_string(resource, "state");
  std::string name = json_string(resource, "name");
  if (state == "attention" && resource.contains("attention") && resource["attention"].is_object()) {
    const Json& a = resource["attention"];
    std::string left = processes_text(a.value("processes", Json::array()));
    return fmt::format("cleanup of job {} run {} unconfirmed{}; check, then: gpuq release --attention {}",
                       field_text(a, "job"), field_text(a, "run"), left.empty() ? "" : " (" + left + ")", name);
  }
  if (state == "foreign" && resource.contains("foreign") && resource["foreign"].is_object()) {
    const Json& f = resource["foreign"];
    std::string held = processes_text(f.value("processes", Json::array()));
    return held.empty() ? json_string(f, "why") : held;
  }
  if (state == "cleaning") return "sweeping what its last run left behind";
  if (auto by = json_int(resource, "preempting_for"); by && *by > 0) {
    return fmt::format("its job is being preempted for job {}", *by);
  }
  return "";
}

}  // namespace gpuq::cli
