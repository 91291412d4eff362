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

namespace gpuq::spec {
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
const std::set<std::string> kPlanOnlyKeys = {"id",   "script", "command",
                                             "args", "deps",   "est_hours"};

// Fields that hold dependencies, whose entries are checked and located one by one.
const std::set<std::string> kDependencyFields = {"after", "after_any", "after_notok", "wait_file",
                                                 "requires"};
const std::set<std::string> kJobDependencyFields = {"after", "after_any", "after_notok"};

// Spellings of one setting: a plan entry that sets one replaces every spelling from headers.
const std::vector<std::set<std::string>> kSameSetting = {{"lane", "lanes"},
                                                         {"est", "est_ms"},
                                                         {"timeout", "timeout_ms"},
                                                         {"retry_delay", "retry_delay_ms"},
                                                         {"not_before", "not_before_ms"},
                                                         {"restart_within", "restart_within_ms"},
                                                         {"requires_warn", "requires_warn_ms"},
                                                         {"quiet", "quiet_ms"},
                                                         {"warn_after", "warn_after_ms"}};

std::set<std::string> spellings(const std::string& key) {
  for (const auto& family : kSameSetting) {
    if (family.count(key)) return family;
  }
  return {key};
}

// One dependency entry of a job and where it was written.
struct DependencyRef {
  std::string field;  // after, after_any, after_notok, wait_file or requires
  Located where;
};

struct BuiltJob {
  std::string id;
  int line = 0;
  json request;
  std::vector<DependencyRef> refs;
};

// A string or a list of strings, as a list; nullopt for anything else.
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

std::string strip_exception_prefix(const std::string& what) {
  size_t close = what.find("] ");
  return what.rfind("[json.exception", 0) == 0 && close != std::string::npos
             ? what.substr(close + 2)
             : what;
}

class PlanChecker {
 public:
  PlanChecker(const std::string& path, const PlanContext& context, const ScriptReader& read)
      : path_(path), context_(context), read_script_(read), env_(context.env) {
    dir_ = fs::path(path).parent_path();
    if (dir_.empty()) dir_ = ".";
  }

  PlanCheck run(std::string_view text) {
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
    for (size_t i = 0; i < jobs.size(); ++i) build_job(jobs[i], JsonLines::child(jobs_pointer, i));
    check_dependencies();
    check_cycles();
    read_reservations(reservations, "/reservations");
    out_.request = {{"jobs", json::array()}, {"reservations", reservation_requests_}};
    for (auto& job : built_) out_.request["jobs"].push_back(std::move(job.request));
    return std::move(out_);
  }

 private:
  void error(const std::string& file, int line, std::string message) {
    out_.diagnostics.push_back(error_at(file, line, std::move(message)));
  }
  void warning(const std::string& file, int line, std::string message) {
    out_.diagnostics.push_back(warning_at(file, line, std::move(message)));
  }
  int line(const std::string& pointer) const { return lines_ ? lines_->line(pointer) : 0; }

  // Directory of the plan, absolute (relative paths in a plan are taken from it).
  fs::path absolute_dir() const {
    return dir_.is_absolute() ? dir_ : (fs::path(context_.cwd) / dir_).lexically_normal();
  }

  std::string job_cwd(const json& entry, const std::string& pointer) {
    if (!entry.contains("cwd")) return context_.cwd;
    if (!entry["cwd"].is_string()) return context_.cwd;  // spec_from_json names the type error
    fs::path cwd(entry["cwd"].get<std::string>());
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
  void plan_refs(const std::string& field, const json& value, const std::string& pointer,
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
  void read_deps(const json& entry, const std::string& pointer, json& fields,
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
        target = dep.substr(5);
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

  // The fields an entry sets itself: pass-through submit fields plus deps, est_hours, command.
  json plan_fields(const json& entry, const std::string& pointer, const std::string& id,
                   std::vector<DependencyRef>& refs) {
    json fields = json::object();
    for (const auto& [key, value] : entry.items()) {
      std::string at = JsonLines::child(pointer, key);
      if (kPlanOnlyKeys.count(key)) continue;
      if (key == "name") {
        error(path_, line(at),
              fmt::format("job '{}': a plan names jobs by \"id\"; remove \"name\"", id));
      } else if (key == "source") {
        error(
            path_, line(at),
            fmt::format("job '{}': \"source\" is set by gpuq (plan file and line); remove it", id));
      } else {
        fields[key] = value;
        if (kDependencyFields.count(key)) plan_refs(key, value, at, refs);
      }
    }
    read_deps(entry, pointer, fields, refs);
    if (entry.contains("est_hours")) {
      const json& hours = entry["est_hours"];
      int at = line(JsonLines::child(pointer, "est_hours"));
      if (!hours.is_number() || !std::isfinite(hours.get<double>()) || hours.get<double>() < 0 ||
          hours.get<double>() > kMaxEstHours) {
        error(path_, at,
              fmt::format("job '{}': \"est_hours\" must be a number of hours, such as 1.5 (at "
                          "most {}, a hundred years)",
                          id, kMaxEstHours));
      } else if (entry.contains("est") || entry.contains("est_ms")) {
        error(path_, at, fmt::format("job '{}': give \"est_hours\" or \"est\", not both", id));
      } else {
        fields["est_ms"] = std::llround(hours.get<double>() * 3'600'000.0);
      }
    }
    if (entry.contains("command")) {
      std::string at = JsonLines::child(pointer, "command");
      auto argv = string_list(entry["command"]);
      if (!argv || !entry["command"].is_array() || argv->empty()) {
        error(path_, line(at),
              fmt::format(
                  "job '{}': \"command\" must be a non-empty list, as in [\"python\", \"eval.py\"]",
                  id));
      } else if (entry.contains("argv")) {
        error(path_, line(at), fmt::format("job '{}': give \"command\" or \"argv\", not both", id));
      } else {
        fields["argv"] = *argv;
      }
    }
    return fields;
  }

  // Reads the entry's script (snapshot into `request`) and its headers; false when unusable.
  bool read_job_script(const json& entry, const std::string& pointer, const std::string& id,
                       json& request, HeaderFields& headers, std::string& script_path) {
    int at = line(JsonLines::child(pointer, "script"));
    if (!entry["script"].is_string() || entry["script"].get<std::string>().empty()) {
      error(
          path_, at,
          fmt::format(
              "job '{}': \"script\" must be the path of a script file, relative to the plan", id));
      return false;
    }
    fs::path written(entry["script"].get<std::string>());
    script_path = (written.is_absolute() ? written : (dir_ / written)).lexically_normal().string();
    const ReadScript& read = read_once(script_path);
    const Result<std::string>& text = read.text;
    if (!text && text.error().code == Code::kNotFound) {
      error(path_, at,
            fmt::format("job '{}': no such script {} (script paths are relative to the plan file's "
                        "directory)",
                        id, script_path));
      return false;
    }
    if (!text) {
      error(path_, at, fmt::format("job '{}': {}", id, text.error().message));
      return false;
    }
    for (const auto& d : read.scan.errors) out_.diagnostics.push_back(d);
    headers = read.scan.headers;
    json args = json::array();
    if (entry.contains("args")) {
      auto list = string_list(entry["args"]);
      if (!list || !entry["args"].is_array()) {
        error(path_, line(JsonLines::child(pointer, "args")),
              fmt::format("job '{}': \"args\" must be a list of strings", id));
      } else {
        args = *list;
      }
    }
    request["script"] = {{"name", script_path}, {"text", *text}, {"args", args}};
    return read.scan.errors.empty();
  }

  // A script and its headers, read and scanned once however many jobs run it.
  struct ReadScript {
    Result<std::string> text;
    HeaderScan scan;
  };
  const ReadScript& read_once(const std::string& path) {
    if (auto found = scripts_.find(path); found != scripts_.end()) return found->second;
    ReadScript read{read_script_(path), {}};
    if (read.text) read.scan = scan_script_headers(path, *read.text);
    return scripts_.emplace(path, std::move(read)).first->second;
  }

  void build_job(const json& entry, const std::string& pointer) {
    int job_line = line(pointer);
    if (!entry.is_object())
      return error(path_, job_line, "each job must be an object with an \"id\"");
    std::string id;
    bool runnable = true;  // has a readable script or a command
    if (!entry.contains("id") || !entry["id"].is_string() ||
        entry["id"].get<std::string>().empty()) {
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

    BuiltJob job{id, job_line, json::object(), {}};
    PlanJob info;
    info.id = id;
    info.line = job_line;
    HeaderFields headers;
    json own = plan_fields(entry, pointer, id, job.refs);
    bool has_command = own.contains("argv");
    if (entry.contains("script")) {
      if (has_command || entry.contains("command")) {
        error(path_, job_line,
              fmt::format("job '{}': give \"script\" or \"command\", not both", id));
        runnable = false;
      } else if (!read_job_script(entry, pointer, id, job.request, headers, info.script_path)) {
        runnable = false;
      }
    } else if (!has_command) {
      if (!entry.contains("command")) {
        error(path_, job_line,
              fmt::format("job '{}' has no \"script\" (a path, relative to the plan) or "
                          "\"command\" (a list such as [\"python\", \"eval.py\"])",
                          id));
      }
      runnable = false;
    } else if (entry.contains("args")) {
      error(path_, line(JsonLines::child(pointer, "args")),
            fmt::format(
                "job '{}': \"args\" go with \"script\"; put a command's arguments in \"command\"",
                id));
    }

    // Headers first, then the entry's own fields replace the same settings.
    if (headers.fields.contains("name") && headers.fields["name"] != json(id)) {
      warning(info.script_path, headers.lines["name"],
              fmt::format("the script sets name={} but the plan's id '{}' names the job",
                          headers.fields["name"].get<std::string>(), id));
    }
    for (const auto& [key, value] : headers.fields.items()) {
      if (key == "name" || own.contains(key)) continue;
      bool replaced = false;
      for (const auto& spelling : spellings(key)) replaced = replaced || own.contains(spelling);
      if (replaced) continue;
      job.request[key] = value;
      if (kDependencyFields.count(key)) {
        const auto& item_lines = headers.item_lines[key];
        for (size_t k = 0; k < value.size(); ++k) {
          job.refs.push_back({key,
                              {value[k].get<std::string>(), info.script_path,
                               k < item_lines.size() ? item_lines[k] : 0}});
        }
      }
    }
    for (auto& item : own.items()) job.request[item.key()] = std::move(item.value());
    job.request["name"] = id;
    job.request["cwd"] = job_cwd(entry, pointer);
    json env = env_;
    if (entry.contains("env") && entry["env"].is_object()) env.update(entry["env"]);
    job.request["env"] = std::move(env);

    {
      // A job whose script could not be read is still checked, with a stand-in command, so
      // that one run of `gpuq lint` reports all of its problems.
      std::optional<json> stand_in;
      if (!runnable) {
        stand_in = job.request;
        stand_in->erase("script");
        (*stand_in)["argv"] = {"true"};
      }
      auto spec = spec_from_json(stand_in ? *stand_in : job.request);
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
    job.request["source"] = fmt::format("{}:{}", path_, job_line);
    for (const auto& ref : job.refs) {
      if (ref.field == "wait_file") info.wait_files.push_back(ref.where);
      if (ref.field == "requires") info.requires_.push_back(ref.where);
    }
    job_index_.emplace(id, built_.size());
    built_.push_back(std::move(job));
    out_.jobs.push_back(std::move(info));
  }

  void check_dependencies() {
    for (const auto& job : built_) {
      for (const auto& ref : job.refs) {
        if (kJobDependencyFields.count(ref.field) && !id_lines_.count(ref.where.text)) {
          warning(ref.where.file, ref.where.line,
                  fmt::format("job '{}': dep '{}' is not in this plan; it must be an existing job",
                              job.id, ref.where.text));
        }
      }
    }
  }

  void check_cycles() {
    std::vector<std::string> ids;
    std::map<std::string, std::vector<std::string>> waits_for;
    for (const auto& job : built_) {
      ids.push_back(job.id);
      for (const auto& ref : job.refs) {
        if (kJobDependencyFields.count(ref.field)) waits_for[job.id].push_back(ref.where.text);
      }
    }
    for (const auto& cycle : find_cycles(ids, waits_for)) {
      error(path_, built_[job_index_.at(cycle.front())].line,
            fmt::format("dependency cycle: {} (each waits for the next, so none can start); "
                        "remove one of these deps",
                        fmt::join(cycle, " -> ")));
    }
  }

  void read_reservation(const json& r, const std::string& pointer, size_t index,
                        std::map<std::string, std::pair<std::string, int>>& reserved_jobs) {
    int at = line(pointer);
    if (!r.is_object())
      return error(path_, at,
                   "each reservation must be {\"name\"?, \"gpus\": [...], \"jobs\": [...]}");
    for (const auto& [key, value] : r.items()) {
      if (key != "name" && key != "gpus" && key != "jobs") {
        error(path_, line(JsonLines::child(pointer, key)),
              fmt::format("unknown key '{}' in a reservation; known: name, gpus, jobs", key));
      }
    }
    std::string name = fmt::format("r{}", index);
    if (r.contains("name")) {
      if (!r["name"].is_string() || r["name"].get<std::string>().empty()) {
        return error(path_, line(JsonLines::child(pointer, "name")),
                     "a reservation's \"name\" must be a non-empty string");
      }
      name = r["name"].get<std::string>();
    }
    for (const auto& existing : out_.reservations) {
      if (existing.name == name) {
        return error(
            path_, at,
            fmt::format("duplicate reservation name '{}' (also at line {})", name, existing.line));
      }
    }
    PlanReservation reservation{name, {}, at};
    const json gpus = r.value("gpus", json());
    bool gpus_ok = gpus.is_array() && !gpus.empty();
    for (const auto& g : gpus_ok ? gpus : json::array())
      gpus_ok =
          gpus_ok && g.is_number_integer() && g.get<int64_t>() >= 0 && g.get<int64_t>() < 1024;
    if (!gpus_ok)
      return error(
          path_, line(JsonLines::child(pointer, "gpus")),
          fmt::format(
              "reservation '{}': \"gpus\" must be a non-empty list of GPU indices, as in [0, 1]",
              name));
    for (const auto& g : gpus) {
      int gpu = g.get<int>();
      if (std::count(reservation.gpus.begin(), reservation.gpus.end(), gpu)) {
        return error(path_, line(JsonLines::child(pointer, "gpus")),
                     fmt::format("reservation '{}' lists GPU {} twice", name, gpu));
      }
      reservation.gpus.push_back(gpu);
    }
    auto jobs = r.contains("jobs") && r["jobs"].is_array() ? string_list(r["jobs"]) : std::nullopt;
    if (!jobs || jobs->empty())
      return error(
          path_, line(JsonLines::child(pointer, "jobs")),
          fmt::format("reservation '{}': \"jobs\" must be a non-empty list of plan ids", name));
    for (size_t k = 0; k < jobs->size(); ++k) {
      const std::string& id = (*jobs)[k];
      int job_at = line(JsonLines::child(JsonLines::child(pointer, "jobs"), k));
      auto found = job_index_.find(id);
      if (found == job_index_.end()) {
        error(path_, job_at,
              fmt::format("reservation '{}' names job '{}', which is not in this plan", name, id));
        continue;
      }
      if (auto other = reserved_jobs.find(id); other != reserved_jobs.end()) {
        error(path_, job_at,
              fmt::format("job '{}' is already in reservation '{}' (line {}); a job can be in one "
                          "reservation",
                          id, other->second.first, other->second.second));
        continue;
      }
      reserved_jobs.emplace(id, std::make_pair(name, at));
      json& request = built_[found->second].request;
      if (request.contains("reservation") && request["reservation"] != json(name)) {
        error(path_, job_at,
              fmt::format("job '{}' sets \"reservation\": {} but is listed in reservation '{}'", id,
                          request["reservation"].dump(), name));
        continue;
      }
      request["reservation"] = name;
      out_.specs[found->second].reservation = name;
      const PlanJob& info = out_.jobs[found->second];
      if (info.gpus > static_cast<int>(reservation.gpus.size())) {
        error(
            path_, job_at,
            fmt::format("job '{}' needs {} GPUs but reservation '{}' has {}; it could never start",
                        id, info.gpus, name, reservation.gpus.size()));
      }
    }
    reservation_requests_.push_back({{"name", name}, {"gpus", reservation.gpus}, {"jobs", *jobs}});
    out_.reservations.push_back(std::move(reservation));
  }

  void read_reservations(const json& list, const std::string& pointer) {
    if (!list.is_array())
      return error(path_, line(pointer),
                   "\"reservations\" must be a list of {\"name\"?, \"gpus\", \"jobs\"}");
    std::map<std::string, std::pair<std::string, int>>
        reserved_jobs;  // job id -> reservation, line
    for (size_t i = 0; i < list.size(); ++i)
      read_reservation(list[i], JsonLines::child(pointer, i), i, reserved_jobs);
  }

  std::string path_;
  fs::path dir_;
  PlanContext context_;
  const ScriptReader& read_script_;
  const json env_;  // context_.env, converted once for every job
  std::map<std::string, ReadScript> scripts_;  // by normalised path
  std::optional<JsonLines> lines_;
  PlanCheck out_;
  std::vector<BuiltJob> built_;
  std::map<std::string, size_t> job_index_;  // id -> index in built_ (the first of duplicates)
  std::map<std::string, int> id_lines_;      // id -> line of its first job
  json reservation_requests_ = json::array();
};

}  // namespace

bool PlanCheck::has_errors() const {
  return std::any_of(diagnostics.begin(), diagnostics.end(),
                     [](const Diagnostic& d) { return d.severity == kError; });
}

PlanCheck check_plan_text(const std::string& path, std::string_view text,
                          const PlanContext& context, const ScriptReader& read_script) {
  return PlanChecker(path, context, read_script).run(text);
}

}  // namespace gpuq::spec
