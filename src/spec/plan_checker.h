// SPDX-License-Identifier: Apache-2.0
// Internal to the plan reader (plan.h): the checker behind check_plan_text, one object per
// plan read. Its work is split by concern over plan.cc (the plan's shape, each job's fields,
// script and dependencies), plan_steps.cc (a job's "steps"), plan_reservations.cc (GPU
// reservations) and plan_sweep.cc (job arrays and grids: "array", "grid", "max_running", and
// dependencies on their elements).
// Every finding goes to the PlanCheck it builds, naming file:line and the fix.
// Owns the plan's parsed values while it runs; not shared between threads.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "spec/headers.h"
#include "spec/json_lines.h"
#include "spec/plan.h"
#include "spec/sweep.h"

namespace gpuq::spec::plan_check {

// Fields that hold dependencies on other jobs (the rest of a dependency field is a condition).
inline const std::set<std::string> kJobDependencyFields = {"after", "after_any", "after_notok"};

// A string or a list of strings, as a list; nullopt for anything else.
std::optional<std::vector<std::string>> string_list(const nlohmann::json& value);

// One dependency entry of a job and where it was written.
struct DependencyRef {
  std::string field;  // after, after_any, after_notok, wait_file or requires
  Located where;
};

// The keys a plan entry writes itself (its submit-request fields, in key order): they replace
// the same settings of its script's headers.
class WrittenKeys {
 public:
  explicit WrittenKeys(const nlohmann::json& entry);
  bool contains(const std::string& key) const;

 private:
  std::vector<std::string> keys_;
};

struct BuiltJob {
  std::string id;
  int line = 0;
  nlohmann::json request;
  std::vector<DependencyRef> refs;
};

// An array job of the plan: its sweep, and its elements' names once a dependency asked.
struct PlanArray {
  Sweep sweep;
  int line = 0;
  std::optional<std::set<std::string>> element_names;  // filled on first use
};

class PlanChecker {
 public:
  PlanChecker(const std::string& path, const PlanContext& context, const ScriptReader& read);
  PlanCheck run(std::string_view text);

 private:
  void error(const std::string& file, int line, std::string message) {
    out_.diagnostics.push_back(error_at(file, line, std::move(message)));
  }
  void warning(const std::string& file, int line, std::string message) {
    out_.diagnostics.push_back(warning_at(file, line, std::move(message)));
  }
  int line(const std::string& pointer) const { return lines_ ? lines_->line(pointer) : 0; }

  // A job's fields, script and dependencies (plan.cc).
  std::filesystem::path absolute_dir() const;
  std::string job_cwd(const nlohmann::json& entry, const std::string& pointer);
  void plan_refs(const std::string& field, const nlohmann::json& value, const std::string& pointer,
                 std::vector<DependencyRef>& refs);
  void read_deps(const nlohmann::json& entry, const std::string& pointer, nlohmann::json& fields,
                 std::vector<DependencyRef>& refs);
  // Whether the entry holds any of the simulator's keys (read_simulation_hints).
  bool take_plan_fields(nlohmann::json& entry, const std::string& pointer, const std::string& id,
                        std::vector<DependencyRef>& refs);
  // A script and its headers, read and scanned once however many jobs (or steps) run it.
  struct ReadScript {
    Result<std::string> text;
    HeaderScan scan;
  };
  const ReadScript& read_once(const std::string& path, ScriptRole role);
  // The entry's script, read (its snapshot replaces the entry's "script"); nullptr when it
  // cannot be read (reported).
  const ReadScript* read_job_script(nlohmann::json& entry, const std::string& pointer,
                                    const std::string& id, std::string& script_path);
  // The script that the entry (a job's or a step's; `what` names it in messages) names in
  // "script" (a path with ~ and $NAME expanded, and perhaps arguments after it: plan_paths.h),
  // resolved from the plan's directory and read (its path into `script_path`, the arguments
  // written after it into `args`), its header errors reported; nullptr when it cannot be read
  // (reported).
  const ReadScript* read_entry_script(const nlohmann::json& entry, const std::string& pointer,
                                      const std::string& what, ScriptRole role,
                                      std::string& script_path, std::vector<std::string>& args);
  // A request's "script": {"name", "text", "args"}: the arguments written in "script", then
  // the entry's "args".
  nlohmann::json script_request(const nlohmann::json& entry, const std::string& pointer,
                                const std::string& what, const std::string& script_path,
                                const std::string& text, std::vector<std::string> written_args);
  // Checks one entry of the plan's jobs and turns it into its job's request, in place.
  void build_job(nlohmann::json& entry, const std::string& pointer);
  void check_dependencies();
  void check_cycles();

  // The simulator's fields and other queues' forms (plan_simulation.cc).
  // "produced_by", "produced_at_frac" and "first_look_frac", checked; produced_by joins the
  // job's refs (field "produced_by") for the checks of dependencies and cycles.
  SimulationHints read_simulation_hints(const nlohmann::json& entry, const std::string& pointer,
                                        const std::string& id, BuiltJob& job);
  // A produced_by ref: a job of the plan, not an array, not the job itself; a job whose
  // daemon-side wait (a "file:" dep or a requires test) is missing gets a warning.
  void check_produced_by(const BuiltJob& job, const DependencyRef& ref);
  // `written`, a path of the plan (a "cwd", a "file:" dep), with ~ and $NAME expanded; the
  // error reported at `at` and nullopt when a variable is missing.
  std::optional<std::string> expanded(const std::string& written, const std::string& what,
                                      int at);
  // The request's GPUs when nothing says: one, as those plans mean, unless the entry or its
  // script's headers name "gpus" or a lane.
  static void default_gpus(nlohmann::json& request);

  // Steps (plan_steps.cc): the entry's "steps" into the request's, each step checked where it
  // is written and its script snapshotted; false when one is unusable (reported).
  bool read_job_steps(const nlohmann::json& entry, const std::string& pointer,
                      const std::string& id, nlohmann::json& request, PlanJob& info);
  std::optional<nlohmann::json> read_plan_step(const nlohmann::json& entry,
                                               const std::string& pointer, const std::string& what,
                                               PlanStep& where);

  // Reservations (plan_reservations.cc).
  void read_reservation(const nlohmann::json& r, const std::string& pointer, size_t index,
                        std::map<std::string, std::pair<std::string, int>>& reserved_jobs);
  void read_reservations(const nlohmann::json& list, const std::string& pointer);

  // Sweeps (plan_sweep.cc).
  // Takes "array", "grid" and "max_running" (from the entry, else from the script's headers)
  // out of `request` into `sweep_fields`, and checks them; the sweep, or nullopt when the job
  // has none or it is unusable (its errors reported).
  std::optional<Sweep> take_sweep(const WrittenKeys& written, const std::string& pointer,
                                  const std::string& id, const HeaderFields& headers,
                                  const std::string& script_path, nlohmann::json& request,
                                  nlohmann::json& sweep_fields);
  // Whether `ref` (a dependency on no job id of the plan) names an element of an array of the
  // plan, as "shards[3]": true for an element it has, and for one it lacks (an error, reported).
  bool names_plan_element(const std::string& job_id, const DependencyRef& ref);
  // The array of the plan that `target` is an element of, or `target` itself.
  std::string dependency_node(const std::string& target);
  // An element name that is also another job's id is an error.
  void check_element_names();

  std::string path_;
  std::filesystem::path dir_;
  PlanContext context_;
  const ScriptReader& read_script_;
  const nlohmann::json env_;                   // context_.env, converted once for every job
  std::map<std::pair<ScriptRole, std::string>, ReadScript> scripts_;  // by role, normalised path
  std::optional<JsonLines> lines_;
  PlanCheck out_;
  std::vector<BuiltJob> built_;
  std::map<std::string, size_t> job_index_;  // id -> index in built_ (the first of duplicates)
  std::map<std::string, int> id_lines_;      // id -> line of its first job
  std::map<std::string, PlanArray> arrays_;  // id -> the array job of that id
  nlohmann::json reservation_requests_ = nlohmann::json::array();
};

}  // namespace gpuq::spec::plan_check
