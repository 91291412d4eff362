// SPDX-License-Identifier: Apache-2.0
// The plan checker's reading of what the plans of the queues people move from write
// (plan_checker.h): the simulator's fields ("produced_by", "produced_at_frac",
// "first_look_frac", kept as SimulationHints and not sent), `~` and `$NAME` in paths
// (plan_paths.h), and one GPU for an entry that says nothing of GPUs.
#include <fmt/format.h>

#include <cmath>

#include "spec/json_lines.h"
#include "spec/plan_checker.h"
#include "spec/plan_paths.h"

namespace gpuq::spec::plan_check {

using nlohmann::json;

namespace {

// A fraction of a run, 0 to 1, or nullopt.
std::optional<double> fraction(const json& value) {
  if (!value.is_number()) return std::nullopt;
  double f = value.get<double>();
  if (!std::isfinite(f) || f < 0 || f > 1) return std::nullopt;
  return f;
}

}  // namespace

SimulationHints PlanChecker::read_simulation_hints(const json& entry, const std::string& pointer,
                                                   const std::string& id, BuiltJob& job) {
  SimulationHints hints;
  auto at = [&](const char* key) { return line(JsonLines::child(pointer, key)); };
  for (const char* key : {"produced_at_frac", "first_look_frac"}) {
    if (entry.contains(key) && !fraction(entry[key])) {
      error(path_, at(key),
            fmt::format("job '{}': \"{}\" must be a fraction of a run, from 0 to 1 (0.25: a "
                        "quarter of the way in)",
                        id, key));
    }
  }
  if (entry.contains("first_look_frac")) hints.first_look_frac = fraction(entry["first_look_frac"]);
  if (entry.contains("produced_by")) {
    const json& by = entry["produced_by"];
    if (!by.is_string() || by.get<std::string>().empty()) {
      error(path_, at("produced_by"),
            fmt::format("job '{}': \"produced_by\" must be the id of the job of this plan that "
                        "writes its input",
                        id));
    } else {
      hints.produced_by = by.get<std::string>();
      job.refs.push_back({"produced_by", {hints.produced_by, path_, at("produced_by")}});
    }
  }
  if (entry.contains("produced_at_frac")) {
    if (!entry.contains("produced_by")) {
      error(path_, at("produced_at_frac"),
            fmt::format("job '{}': \"produced_at_frac\" says when another job writes this one's "
                        "input; name that job in \"produced_by\"",
                        id));
    }
    hints.produced_at_frac = fraction(entry["produced_at_frac"]).value_or(1.0);
  }
  return hints;
}

void PlanChecker::check_produced_by(const BuiltJob& job, const DependencyRef& ref) {
  const std::string& by = ref.where.text;
  if (by == job.id) {
    return error(ref.where.file, ref.where.line,
                 fmt::format("job '{}': \"produced_by\" names the job itself; name the job that "
                             "writes its input",
                             job.id));
  }
  if (!id_lines_.count(by)) {
    return error(ref.where.file, ref.where.line,
                 fmt::format("job '{}': \"produced_by\" names '{}', which is not a job of this "
                             "plan; name the job of the plan that writes its input",
                             job.id, by));
  }
  if (arrays_.count(by)) {
    return error(ref.where.file, ref.where.line,
                 fmt::format("job '{}': \"produced_by\" names the job array '{}'; name a single "
                             "job (a simulation cannot tell which element writes the input)",
                             job.id, by));
  }
  bool waits = false;  // for the input, or for the producer's end
  for (const auto& other : job.refs) {
    waits = waits || other.field == "wait_file" || other.field == "requires" ||
            (kJobDependencyFields.count(other.field) && other.where.text == by);
  }
  if (!waits) {
    warning(ref.where.file, ref.where.line,
            fmt::format("job '{}': \"produced_by\" tells `gpuq simulate` when '{}' writes its "
                        "input, but the daemon starts it as soon as its dependencies allow and "
                        "it has no \"file:\" dep or requires test; add the file it reads to "
                        "\"deps\" as \"file:PATH\"",
                        job.id, by));
  }
}

std::optional<std::string> PlanChecker::expanded(const std::string& written,
                                                 const std::string& what, int at) {
  auto path = expand_plan_path(written, context_.shell);
  if (!path) {
    error(path_, at, fmt::format("{}: {}", what, path.error().message));
    return std::nullopt;
  }
  return std::move(*path);
}

void PlanChecker::default_gpus(json& request) {
  if (!request.contains("gpus") && !request.contains("lane") && !request.contains("lanes"))
    request["gpus"] = 1;
}

}  // namespace gpuq::spec::plan_check
