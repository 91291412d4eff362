// SPDX-License-Identifier: Apache-2.0
#include "model/step.h"

#include <fmt/format.h>

namespace gpuq {
namespace {

constexpr std::pair<StepState, std::string_view> kStateNames[] = {
    {StepState::kPending, "pending"},     {StepState::kRunning, "running"},
    {StepState::kSucceeded, "succeeded"}, {StepState::kFailed, "failed"},
    {StepState::kSkipped, "skipped"},     {StepState::kStopped, "stopped"},
    {StepState::kTimedOut, "timed_out"},
};

}  // namespace

std::string_view to_string(StepState state) {
  for (const auto& [s, name] : kStateNames) {
    if (s == state) return name;
  }
  return "pending";
}

Result<StepState> parse_step_state(std::string_view text) {
  for (const auto& [s, name] : kStateNames) {
    if (name == text) return s;
  }
  return fail(Code::kInvalidArgument,
              fmt::format("\"{}\" is not a step state (pending, running, succeeded, failed, skipped, "
                          "stopped, timed_out)",
                          text));
}

std::string default_step_name(const JobStep& step) {
  if (!step.script_text.empty() || !step.script_name.empty()) {
    size_t slash = step.script_name.rfind('/');
    return slash == std::string::npos ? step.script_name : step.script_name.substr(slash + 1);
  }
  std::string text;
  for (const auto& arg : step.argv) {
    if (!text.empty()) text += ' ';
    text += arg;
  }
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

nlohmann::json step_spec_to_json(const StepSpec& step) {
  nlohmann::json j = {{"name", step.name}, {"argv", step.argv}};
  if (step.timeout_ms > 0) j["timeout_ms"] = step.timeout_ms;
  if (!step.done_if.empty()) j["done_if"] = step.done_if;
  return j;
}

Result<StepSpec> step_spec_from_json(const nlohmann::json& j) {
  StepSpec step;
  try {
    step.name = j.value("name", std::string());
    step.argv = j.at("argv").get<std::vector<std::string>>();
    step.timeout_ms = j.value("timeout_ms", int64_t{0});
    step.done_if = j.value("done_if", std::string());
  } catch (const nlohmann::json::exception& e) {
    return fail(Code::kCorruption, fmt::format("a step: {}", e.what()));
  }
  if (step.argv.empty()) return fail(Code::kCorruption, "a step has an empty argv");
  if (step.timeout_ms < 0) return fail(Code::kCorruption, "a step has a negative timeout_ms");
  return step;
}

nlohmann::json step_run_to_json(const StepRun& step) {
  auto optional_int = [](const std::optional<int>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"index", step.index},
          {"state", to_string(step.state)},
          {"started_at_ms", step.started_at_ms},
          {"ended_at_ms", step.ended_at_ms},
          {"exit_code", optional_int(step.exit_code)},
          {"signal", optional_int(step.signal)},
          {"log_offset", step.log_offset}};
}

Result<StepRun> step_run_from_json(const nlohmann::json& j) {
  StepRun step;
  try {
    step.index = j.at("index").get<int>();
    auto state = parse_step_state(j.at("state").get<std::string>());
    if (!state) return tl::unexpected(state.error());
    step.state = *state;
    step.started_at_ms = j.value("started_at_ms", int64_t{0});
    step.ended_at_ms = j.value("ended_at_ms", int64_t{0});
    if (j.contains("exit_code") && !j["exit_code"].is_null()) step.exit_code = j["exit_code"].get<int>();
    if (j.contains("signal") && !j["signal"].is_null()) step.signal = j["signal"].get<int>();
    step.log_offset = j.value("log_offset", int64_t{0});
  } catch (const nlohmann::json::exception& e) {
    return fail(Code::kCorruption, fmt::format("a step's record: {}", e.what()));
  }
  if (step.index < 0) return fail(Code::kCorruption, "a step's record has a negative index");
  return step;
}

int resume_step(const std::vector<StepRun>& previous, int first_of_previous, int count) {
  int next = first_of_previous;
  for (const StepRun& step : previous) {
    if (step.index != next || !step_done(step.state)) break;
    ++next;
  }
  return std::min(next, count);
}

}  // namespace gpuq
