// SPDX-License-Identifier: Apache-2.0
// The plan checker's main line (plan_checker.h): the plan's shape, each job's fields, script,
// headers and dependencies, and the cycle check; the public functions of plan.h over text.
#include "spec/plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>

#include "base/json_depth.h"
#include "model/spec_json.h"
#include "spec/dependency_graph.h"
#include "spec/headers.h"
#include "spec/json_lines.h"
#include "spec/plan_checker.h"
#include "spec/plan_paths.h"

namespace gpuq::spec::plan_check {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Deeper than any plan needs (the plan, "jobs", a job, a field, an entry of it: 5), shallow
// enough that recursive copies and dumps of a value cannot exhaust the stack.
constexpr int kMaxPlanDepth = 32;

// The longest estimate, as parse_duration's longest duration (36500d): more is a typo, and far
// more would overflow est_ms.
constexpr int kMaxEstHours = 36'500 * 24;

// Keys of a plan entry that are not submit-request fields; the rest pass through as they are.
const std::set<std::string> kPlanOnlyKeys = {"id",   "script", "command",  "args",
                                             "deps", "steps",  "est_hours"};
// The simulator's keys (SimulationHints), not sent either; apart, so that the entries without
// them (most) pay no lookup for them.
const std::set<std::string> kSimulationKeys = {"produced_by", "produced_at_frac",
                                               "first_look_frac"};

bool is_simulation_key(const std::string& key) {  // the first letter spares most lookups
  return !key.empty() && (key[0] == 'p' || key[0] == 'f') && kSimulationKeys.count(key);
}

// Fields that hold dependencies, whose entries are checked and located one by one.
const std::set<std::string> kDependencyFields = {"after", "after_any", "after_notok", "wait_file",
                                                 "requires"};

// Spellings of one setting: a plan entry that sets one replaces every spelling from headers.
const std::vector<std::set<std::string>> kSameSetting = {{"lane", "lanes"},
                                                         {"est", "est_ms"},
                                                         {"timeout", "timeout_ms"},
                                                         {"retry_delay", "retry_delay_ms"},
                                                         {"not_before", "not_before_ms"},
                                                         {"restart_within", "restart_within_ms"},
                                                         {"requires_warn", "requires_warn_ms"},
                                                         {"quiet", "quiet_ms"},
                                                         {"warn_after", "warn_after_ms"},
                                                         {"array", "grid"}};

std::set<std::string> spellings(const std::string& key) {
  for (const auto& family : kSameSetting) {
    if (family.count(key)) return family;
  }
  return {key};
}

std::string strip_exception_prefix(const std::string& what) {
  size_t close = what.find("] ");
  return what.rfind("[json.exception", 0) == 0 && close != std::string::npos
             ? what.substr(close + 2)
             : what;
}

}  // namespace

std::optional<std::vector<std::string>> string_list(const json& value) {
  if (value.is_string()) return std::vector<std::string>{value.get<std::string>()};
  if (!value.is_array()) return std::nullopt;
  std::vector<std::string> out;
  for (const auto& item : value) {
    if (!item.is_string()) return std::nullopt;
    out.push_back(item.get<std::string>());
  }
  return out;
}

PlanChecker::PlanChecker(const std::string& path, const PlanContext& context,
                         const ScriptReader& read)
    : path_(path), context_(context), read_script_(read), env_(context.env) {
  dir_ = fs::path(path).parent_path();
  if (dir_.empty()) dir_ = ".";
}

PlanCheck PlanChecker::run(std::string_view text) {
  if (auto at = json_nesting_beyond(text, kMaxPlanDepth)) {
    error(path_, line_of_offset(text, *at),
          fmt::format("nested more than {} levels deep; a plan is a list of jobs whose values "
                      "are strings, numbers, lists and objects of those",
                      kMaxPlanDepth));
    return std::move(out_);
  }
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for 1e400
    error(path_, json_error_line(text, e),
          fmt::format("not valid JSON: {}", strip_exception_prefix(e.what())));
    return std::move(out_);
  }
  lines_.emplace(text);
  json jobs = json::array(), reservations = json::array();
  std::string jobs_pointer;
  const bool listed = root.is_array() || (root.is_object() && root.contains("jobs"));
  if (root.is_array()) {  // moved, not copied, from here on: root is read no more
    jobs = std::move(root);
  } else if (root.is_object()) {
    for (const auto& [key, value] : root.items()) {
      if (key != "jobs" && key != "reservations") {
        error(path_, line(JsonLines::child("", key)),
              fmt::format("unknown top-level key '{}'; a plan has \"jobs\" and \"reservations\"",
                          key));
      }
    }
    jobs_pointer = "/jobs";
    if (!root.contains("jobs")) error(path_, 1, "the plan has no \"jobs\" list");
    if (root.contains("jobs")) jobs = std::move(root["jobs"]);
    if (root.contains("reservations")) reservations = std::move(root["reservations"]);
  } else {
    error(path_, 1,
          "a plan is a JSON object {\"jobs\": [...], \"reservations\": [...]} or a list of jobs");
    return std::move(out_);
  }
  if (!jobs.is_array()) {
    error(path_, line(jobs_pointer), "\"jobs\" must be a list of job objects");
    jobs = json::array();
  }
  if (jobs.empty() && listed) warning(path_, 1, "the plan has no jobs");
  out_.specs.reserve(jobs.size());  // JobSpec's move may throw: growing would copy them
  out_.jobs.reserve(jobs.size());
  out_.sweeps.reserve(jobs.size());
  // Each entry becomes its job's request in place (build_job): jobs is read no more after.
  for (size_t i = 0; i < jobs.size(); ++i) build_job(jobs[i], JsonLines::child(jobs_pointer, i));
  check_element_names();
  check_dependencies();
  check_cycles();
  read_reservations(reservations, "/reservations");
  if (context_.keep_request) {
    out_.request = {{"jobs", json::array()}, {"reservations", reservation_requests_}};
    for (auto& job : built_) out_.request["jobs"].push_back(std::move(job.request));
  }
  return std::move(out_);
}

// Directory of the plan, absolute (relative paths in a plan are taken from it).
fs::path PlanChecker::absolute_dir() const {
  return dir_.is_absolute() ? dir_ : (fs::path(context_.cwd) / dir_).lexically_normal();
}

std::string PlanChecker::job_cwd(const json& entry, const std::string& pointer) {
  if (!entry.contains("cwd")) return context_.cwd;
  if (!entry["cwd"].is_string()) return context_.cwd;  // spec_from_json names the type error
  auto written = expanded(entry["cwd"].get<std::string>(), "\"cwd\"",
                          line(JsonLines::child(pointer, "cwd")));
  if (!written) return context_.cwd;
  fs::path cwd(*written);
  if (cwd.is_relative()) cwd = absolute_dir() / cwd;
  std::string text = cwd.lexically_normal().string();
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  std::error_code ec;
  if (!fs::is_directory(text, ec)) {
    warning(path_, line(JsonLines::child(pointer, "cwd")),
            fmt::format("cwd {} is not a directory (yet)", text));
  }
  return text;
}

// Adds the entries of a dependency field written in the plan to `refs`.
void PlanChecker::plan_refs(const std::string& field, const json& value, const std::string& pointer,
                            std::vector<DependencyRef>& refs) {
  if (value.is_string()) {
    refs.push_back({field, {value.get<std::string>(), path_, line(pointer)}});
  } else if (value.is_array()) {
    for (size_t k = 0; k < value.size(); ++k) {
      if (value[k].is_string())
        refs.push_back(
            {field, {value[k].get<std::string>(), path_, line(JsonLines::child(pointer, k))}});
    }
  }
}

// "deps": plan ids or job names (after), "file:PATH" (wait_file), "after:ID" (after_any).
void PlanChecker::read_deps(const json& entry, const std::string& pointer, json& fields,
                            std::vector<DependencyRef>& refs) {
  if (!entry.contains("deps")) return;
  std::string deps_pointer = JsonLines::child(pointer, "deps");
  auto deps = string_list(entry["deps"]);
  if (!deps)
    return error(path_, line(deps_pointer),
                 "\"deps\" must be a list of job ids, \"file:PATH\" or \"after:ID\"");
  for (size_t k = 0; k < deps->size(); ++k) {
    const std::string& dep = (*deps)[k];
    int at = line(entry["deps"].is_array() ? JsonLines::child(deps_pointer, k) : deps_pointer);
    std::string field = "after";
    std::string target = dep;
    if (dep.rfind("file:", 0) == 0) {
      field = "wait_file";
      auto path = expanded(dep.substr(5), fmt::format("dep '{}'", dep), at);
      if (!path) continue;
      target = std::move(*path);
    } else if (dep.rfind("after:", 0) == 0) {
      field = "after_any";
      target = dep.substr(6);
    }
    if (target.empty()) {
      error(path_, at,
            fmt::format("empty dep '{}'; write a job id, \"file:PATH\" or \"after:ID\"", dep));
      continue;
    }
    if (!fields.contains(field)) fields[field] = json::array();
    if (fields[field].is_string()) fields[field] = json::array({fields[field]});
    if (fields[field].is_array()) fields[field].push_back(target);
    refs.push_back({field, {target, path_, at}});
  }
}

// The fields an entry sets itself, turned in place into submit-request fields: "deps",
// "est_hours" and "command" become the fields they stand for; the rest stay as written.
bool PlanChecker::take_plan_fields(json& entry, const std::string& pointer, const std::string& id,
                                   std::vector<DependencyRef>& refs) {
  bool simulation_keys = false;
  for (const auto& [key, value] : entry.items()) {
    if (kPlanOnlyKeys.count(key)) continue;
    if (is_simulation_key(key)) {
      simulation_keys = true;
      continue;
    }
    if (key == "name") {
      error(path_, line(JsonLines::child(pointer, key)),
            fmt::format("job '{}': a plan names jobs by \"id\"; remove \"name\"", id));
    } else if (key == "source") {
      error(path_, line(JsonLines::child(pointer, key)),
            fmt::format("job '{}': \"source\" is set by gpuq (plan file and line); remove it", id));
    } else if (kDependencyFields.count(key)) {
      plan_refs(key, value, JsonLines::child(pointer, key), refs);
    }
  }
  read_deps(entry, pointer, entry, refs);
  if (entry.contains("est_hours")) {
    const json& hours = entry["est_hours"];
    if (!hours.is_number() || !std::isfinite(hours.get<double>()) || hours.get<double>() < 0 ||
        hours.get<double>() > kMaxEstHours) {
      error(path_, line(JsonLines::child(pointer, "est_hours")),
            fmt::format("job '{}': \"est_hours\" must be a number of hours, such as 1.5 (at "
                        "most {}, a hundred years)",
                        id, kMaxEstHours));
    } else if (entry.contains("est") || entry.contains("est_ms")) {
      error(path_, line(JsonLines::child(pointer, "est_hours")),
            fmt::format("job '{}': give \"est_hours\" or \"est\", not both", id));
    } else {
      entry["est_ms"] = std::llround(hours.get<double>() * 3'600'000.0);
    }
  }
  if (entry.contains("command")) {
    auto argv = string_list(entry["command"]);
    if (!argv || !entry["command"].is_array() || argv->empty()) {
      error(path_, line(JsonLines::child(pointer, "command")),
            fmt::format(
                "job '{}': \"command\" must be a non-empty list, as in [\"python\", \"eval.py\"]",
                id));
    } else if (entry.contains("argv")) {
      error(path_, line(JsonLines::child(pointer, "command")),
            fmt::format("job '{}': give \"command\" or \"argv\", not both", id));
    } else {
      entry["argv"] = std::move(*argv);
    }
  }
  return simulation_keys;
}

WrittenKeys::WrittenKeys(const json& entry) {
  for (const auto& [key, value] : entry.items()) {  // in key order: sorted
    if (!kPlanOnlyKeys.count(key) && !is_simulation_key(key) && key != "name" &&
        key != "source")
      keys_.push_back(key);
  }
}

bool WrittenKeys::contains(const std::string& key) const {
  return std::binary_search(keys_.begin(), keys_.end(), key);
}

const PlanChecker::ReadScript* PlanChecker::read_entry_script(const json& entry,
                                                              const std::string& pointer,
                                                              const std::string& what,
                                                              ScriptRole role,
                                                              std::string& script_path,
                                                              std::vector<std::string>& args) {
  int at = line(JsonLines::child(pointer, "script"));
  if (!entry["script"].is_string() || entry["script"].get<std::string>().empty()) {
    error(path_, at,
          fmt::format("{}: \"script\" must be the path of a script file, relative to the plan",
                      what));
    return nullptr;
  }
  auto resolve = [&](const std::string& written) {
    fs::path p(written);
    return (p.is_absolute() ? p : (dir_ / p)).lexically_normal().string();
  };
  const std::string& written = entry["script"].get<std::string>();
  std::string path;
  if (written.find_first_of(" \t\n'\"\\$~") == std::string::npos) {
    path = resolve(written);  // a plain path, as most are: nothing to split or expand
  } else {
    auto words = read_script_words(written, context_.shell, [&](const std::string& word) {
      const auto& text = read_once(resolve(word), role).text;
      return text || text.error().code != Code::kNotFound;
    });
    if (!words) {
      error(path_, at, fmt::format("{}: \"script\" {}", what, words.error().message));
      return nullptr;
    }
    args = std::move(words->args);
    path = resolve(words->path);
  }
  const ReadScript& read = read_once(path, role);
  const Result<std::string>& text = read.text;
  if (!text && text.error().code == Code::kNotFound) {
    error(path_, at,
          fmt::format("{}: no such script {} (script paths are relative to the plan file's "
                      "directory)",
                      what, path));
    return nullptr;
  }
  if (!text) {
    error(path_, at, fmt::format("{}: {}", what, text.error().message));
    return nullptr;
  }
  for (const auto& d : read.scan.errors) out_.diagnostics.push_back(d);
  script_path = std::move(path);  // only a script that was read: lint reads it again
  return &read;
}

json PlanChecker::script_request(const json& entry, const std::string& pointer,
                                 const std::string& what, const std::string& script_path,
                                 const std::string& text, std::vector<std::string> written_args) {
  json args = std::move(written_args);  // those written in "script" come first
  if (entry.contains("args")) {
    auto list = string_list(entry["args"]);
    if (!list || !entry["args"].is_array()) {
      error(path_, line(JsonLines::child(pointer, "args")),
            fmt::format("{}: \"args\" must be a list of strings", what));
    } else {
      for (auto& arg : *list) args.push_back(std::move(arg));
    }
  }
  return {{"name", script_path}, {"text", text}, {"args", args}};
}

// Reads the entry's script (its snapshot replaces the entry's "script") and points `headers`
// at its headers; nullptr when it cannot be read (reported).
const PlanChecker::ReadScript* PlanChecker::read_job_script(json& entry, const std::string& pointer,
                                                            const std::string& id,
                                                            std::string& script_path) {
  std::string what = fmt::format("job '{}'", id);
  std::vector<std::string> args;
  const ReadScript* read =
      read_entry_script(entry, pointer, what, ScriptRole::kJob, script_path, args);
  if (!read) return nullptr;
  entry["script"] = script_request(entry, pointer, what, script_path, *read->text, std::move(args));
  return read;
}

const PlanChecker::ReadScript& PlanChecker::read_once(const std::string& path, ScriptRole role) {
  auto key = std::pair(role, path);
  if (auto found = scripts_.find(key); found != scripts_.end()) return found->second;
  ReadScript read{read_script_(path), {}};
  if (read.text) read.scan = scan_script_headers(path, *read.text, role);
  return scripts_.emplace(key, std::move(read)).first->second;
}

void PlanChecker::build_job(json& entry, const std::string& pointer) {
  int job_line = line(pointer);
  if (!entry.is_object())
    return error(path_, job_line, "each job must be an object with an \"id\"");
  std::string id;
  bool runnable = true;  // has a readable script or a command
  if (!entry.contains("id") || !entry["id"].is_string() || entry["id"].get<std::string>().empty()) {
    error(path_, job_line,
          "job has no \"id\"; give each job a unique string id (it becomes the job's name)");
    id = fmt::format("#{}", built_.size() + 1);
  } else {
    id = entry["id"].get<std::string>();
    if (auto seen = id_lines_.find(id); seen != id_lines_.end()) {
      error(path_, job_line,
            fmt::format("duplicate id '{}' (also at line {}); each job needs its own id", id,
                        seen->second));
    }
  }
  id_lines_.emplace(id, job_line);

  // The entry becomes the job's submit request in place: nothing of it is copied.
  BuiltJob job{id, job_line, json(), {}};
  json& request = entry;
  PlanJob info;
  info.id = id;
  info.line = job_line;
  static const HeaderFields kNoHeaders;
  const HeaderFields* headers = &kNoHeaders;
  const bool simulation_keys = take_plan_fields(request, pointer, id, job.refs);
  SimulationHints hints;
  if (simulation_keys) hints = read_simulation_hints(entry, pointer, id, job);
  const WrittenKeys own(request);
  bool has_command = request.contains("argv");
  bool script_kept = false, steps_kept = false;  // the entry's, replaced by their requests
  if (entry.contains("steps")) {
    if (entry.contains("script") || entry.contains("command") || has_command ||
        entry.contains("args")) {
      error(path_, job_line,
            fmt::format("job '{}': give \"steps\" or \"script\"/\"command\", not both: with "
                        "steps, each step says what it runs",
                        id));
      runnable = false;
    } else {
      steps_kept = read_job_steps(entry, pointer, id, request, info);
      runnable = steps_kept;
    }
  } else if (entry.contains("script")) {
    if (has_command || entry.contains("command")) {
      error(path_, job_line, fmt::format("job '{}': give \"script\" or \"command\", not both", id));
      runnable = false;
    } else if (const ReadScript* read = read_job_script(entry, pointer, id, info.script_path)) {
      script_kept = true;
      headers = &read->scan.headers;
      runnable = read->scan.errors.empty();
    } else {
      runnable = false;
    }
  } else if (!has_command) {
    if (!entry.contains("command")) {
      error(path_, job_line,
            fmt::format("job '{}' has no \"script\" (a path, relative to the plan), "
                        "\"command\" (a list such as [\"python\", \"eval.py\"]) or \"steps\"",
                        id));
    }
    runnable = false;
  } else if (entry.contains("args")) {
    error(
        path_, line(JsonLines::child(pointer, "args")),
        fmt::format(
            "job '{}': \"args\" go with \"script\"; put a command's arguments in \"command\"", id));
  }
  // The working directory and environment as the entry sets them, before headers join.
  std::string cwd = job_cwd(entry, pointer);
  json env = env_;
  if (entry.contains("env") && entry["env"].is_object()) env.update(entry["env"]);
  // What is left of the plan's own keys is not a submit-request field.
  for (const std::string& key : kPlanOnlyKeys) {
    if ((key == "script" && script_kept) || (key == "steps" && steps_kept)) continue;
    request.erase(key);
  }
  request.erase("source");
  if (simulation_keys) {
    for (const std::string& key : kSimulationKeys) request.erase(key);
  }

  // The script's headers, where the entry sets neither the same key nor another spelling of it.
  const json& header_fields = headers->fields;
  if (auto name = header_fields.find("name"); name != header_fields.end() && *name != json(id)) {
    warning(info.script_path, headers->lines.at("name"),
            fmt::format("the script sets name={} but the plan's id '{}' names the job",
                        name->get<std::string>(), id));
  }
  for (const auto& [key, value] : header_fields.items()) {
    if (key == "name" || own.contains(key)) continue;
    bool replaced = false;
    for (const auto& spelling : spellings(key)) replaced = replaced || own.contains(spelling);
    if (replaced) continue;
    request[key] = value;
    if (kDependencyFields.count(key)) {
      auto lines = headers->item_lines.find(key);
      for (size_t k = 0; k < value.size(); ++k) {
        int at = lines != headers->item_lines.end() && k < lines->second.size() ? lines->second[k] : 0;
        job.refs.push_back({key, {value[k].get<std::string>(), info.script_path, at}});
      }
    }
  }
  default_gpus(request);
  request["name"] = id;
  request["cwd"] = std::move(cwd);
  request["env"] = std::move(env);
  json sweep_fields = json::object();  // back into the request once its spec is read
  std::optional<Sweep> sweep =
      take_sweep(own, pointer, id, *headers, info.script_path, request, sweep_fields);

  {
    // A job whose script could not be read is still checked, with a stand-in command, so
    // that one run of `gpuq lint` reports all of its problems.
    std::optional<json> stand_in;
    if (!runnable) {
      stand_in = request;
      stand_in->erase("script");
      stand_in->erase("steps");
      (*stand_in)["argv"] = {"true"};
    }
    auto spec = spec_from_json(stand_in ? *stand_in : request);
    if (!spec) {
      error(path_, job_line, fmt::format("job '{}': {}", id, spec.error().message));
      spec = JobSpec{};
    } else {
      info.gpus = spec->gpus;
      info.cwd = spec->cwd;
      info.outputs = spec->outputs;
    }
    out_.specs.push_back(std::move(*spec));
  }
  out_.sweeps.push_back(std::move(sweep));
  out_.simulation.push_back(std::move(hints));
  if (context_.keep_request) {
    for (auto& item : sweep_fields.items()) request[item.key()] = std::move(item.value());
    request["source"] = fmt::format("{}:{}", path_, job_line);
    job.request = std::move(request);
  }
  for (const auto& ref : job.refs) {
    if (ref.field == "wait_file") info.wait_files.push_back(ref.where);
    if (ref.field == "requires") info.requires_.push_back(ref.where);
  }
  job_index_.emplace(id, built_.size());
  built_.push_back(std::move(job));
  out_.jobs.push_back(std::move(info));
}

void PlanChecker::check_dependencies() {
  for (const auto& job : built_) {
    for (const auto& ref : job.refs) {
      if (ref.field == "produced_by") check_produced_by(job, ref);
      if (kJobDependencyFields.count(ref.field) && !id_lines_.count(ref.where.text) &&
          !names_plan_element(job.id, ref)) {
        warning(ref.where.file, ref.where.line,
                fmt::format("job '{}': dep '{}' is not in this plan; it must be an existing job",
                            job.id, ref.where.text));
      }
    }
  }
}

void PlanChecker::check_cycles() {
  std::vector<std::string> ids;
  std::map<std::string, std::vector<std::string>> waits_for;
  for (const auto& job : built_) {
    ids.push_back(job.id);
    for (const auto& ref : job.refs) {  // a simulated job waits for its producer too
      if (kJobDependencyFields.count(ref.field) ||
          (ref.field == "produced_by" && ref.where.text != job.id))  // itself: reported
        waits_for[job.id].push_back(dependency_node(ref.where.text));
    }
  }
  for (const auto& cycle : find_cycles(ids, waits_for)) {
    error(path_, built_[job_index_.at(cycle.front())].line,
          fmt::format("dependency cycle: {} (each waits for the next, so none can start); "
                      "remove one of these deps",
                      fmt::join(cycle, " -> ")));
  }
}

}  // namespace gpuq::spec::plan_check

namespace gpuq::spec {

bool PlanCheck::has_errors() const {
  return std::any_of(diagnostics.begin(), diagnostics.end(),
                     [](const Diagnostic& d) { return d.severity == kError; });
}

PlanCheck check_plan_text(const std::string& path, std::string_view text,
                          const PlanContext& context, const ScriptReader& read_script) {
  return plan_check::PlanChecker(path, context, read_script).run(text);
}

}  // namespace gpuq::spec
