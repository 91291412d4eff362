// SPDX-License-Identifier: Apache-2.0
// The plan checker's steps (plan_checker.h, docs/jobs.md "Steps"): a job's "steps", each
// {"script": PATH, "args"?} or {"argv": [...]} (or "command", as a plan job's) with an optional
// "name", "timeout", "done_if" and "image". A step's script is read from the plan's directory and
// snapshotted as a job's is, its `#gpuq` step headers apply and the step's own fields replace
// them. Each finding is at the line of the step (or of its field) that must change.
#include <fmt/format.h>

#include "model/limits.h"
#include "model/spec_json.h"
#include "spec/plan_checker.h"

namespace gpuq::spec::plan_check {
namespace {

using nlohmann::json;

const std::set<std::string> kStepKeys = {"name",    "script",     "args",    "argv", "command",
                                         "timeout", "timeout_ms", "done_if", "image"};
// What a step's entry may set itself, replacing its script's header.
constexpr const char* kStepSettings[] = {"name", "timeout", "timeout_ms", "done_if", "image"};
constexpr const char* kStepForms =
    "{\"script\": PATH, \"args\": [...]} or {\"argv\": [\"python\", \"eval.py\"]}";

}  // namespace

bool PlanChecker::read_job_steps(const json& entry, const std::string& pointer,
                                 const std::string& id, json& request, PlanJob& info) {
  const std::string steps_pointer = JsonLines::child(pointer, "steps");
  const json& steps = entry["steps"];
  if (!steps.is_array() || steps.empty()) {
    error(path_, line(steps_pointer),
          fmt::format("job '{}': \"steps\" must be a non-empty list of steps, each {}", id,
                      kStepForms));
    return false;
  }
  if (steps.size() > static_cast<size_t>(limits::kMaxSteps)) {
    error(path_, line(steps_pointer),
          fmt::format("job '{}' has {} steps; a job has at most {}: join some into a script", id,
                      steps.size(), limits::kMaxSteps));
    return false;
  }
  bool usable = true;
  json built = json::array();
  for (size_t k = 0; k < steps.size(); ++k) {
    std::string step_pointer = JsonLines::child(steps_pointer, k);
    PlanStep where{line(step_pointer), ""};
    auto step =
        read_plan_step(steps[k], step_pointer, fmt::format("job '{}': steps[{}]", id, k), where);
    info.steps.push_back(std::move(where));
    if (!step) {
      usable = false;
      continue;
    }
    built.push_back(std::move(*step));
  }
  if (usable) request["steps"] = std::move(built);
  return usable;
}

std::optional<json> PlanChecker::read_plan_step(const json& entry, const std::string& pointer,
                                                const std::string& what, PlanStep& where) {
  if (!entry.is_object()) {
    error(path_, where.line, fmt::format("{}: a step is an object, {}", what, kStepForms));
    return std::nullopt;
  }
  bool fine = true;
  for (const auto& [key, value] : entry.items()) {
    if (kStepKeys.count(key)) continue;
    error(path_, line(JsonLines::child(pointer, key)),
          fmt::format("{}: unknown key '{}'; a step has \"script\" (and \"args\") or \"argv\", and "
                      "\"name\", \"timeout\", \"done_if\", \"image\"",
                      what, key));
    fine = false;
  }
  const bool has_argv = entry.contains("argv") || entry.contains("command");
  if (entry.contains("script") == has_argv ||
      (entry.contains("argv") && entry.contains("command"))) {
    error(path_, where.line,
          fmt::format("{}: give one of \"script\" (a path, relative to the plan) and \"argv\" (a "
                      "command), as in {}",
                      what, kStepForms));
    return std::nullopt;
  }
  json step = json::object();
  if (entry.contains("script")) {
    std::vector<std::string> args;
    const ReadScript* read =
        read_entry_script(entry, pointer, what, ScriptRole::kStep, where.script_path, args);
    if (!read) return std::nullopt;
    step = read->scan.headers.fields;
    step["script"] =
        script_request(entry, pointer, what, where.script_path, *read->text, std::move(args));
    fine = fine && read->scan.errors.empty();
  } else {
    const char* key = entry.contains("argv") ? "argv" : "command";
    auto argv = string_list(entry[key]);
    if (!argv || !entry[key].is_array() || argv->empty()) {
      error(path_, line(JsonLines::child(pointer, key)),
            fmt::format("{}: \"{}\" must be a non-empty list of strings, as in [\"python\", "
                        "\"eval.py\"]",
                        what, key));
      return std::nullopt;
    }
    step["argv"] = *argv;
    if (entry.contains("args")) {
      error(path_, line(JsonLines::child(pointer, "args")),
            fmt::format("{}: \"args\" go with \"script\"; put a command's arguments in \"{}\"",
                        what, key));
      fine = false;
    }
  }
  for (const char* key : kStepSettings) {
    if (!entry.contains(key)) continue;
    if (std::string_view(key).starts_with("timeout")) {
      step.erase("timeout");
      step.erase("timeout_ms");
    }
    step[key] = entry[key];
  }
  if (!fine) return std::nullopt;
  if (auto checked = step_from_json(step); !checked) {
    error(path_, where.line, fmt::format("{}: {}", what, checked.error().message));
    return std::nullopt;
  }
  return step;
}

}  // namespace gpuq::spec::plan_check
