// SPDX-License-Identifier: Apache-2.0
// Plan files: a JSON list of jobs (with scripts, dependencies and estimates) and GPU
// reservations, turned into the body of POST /v1/plans (docs/api.md). The format is the one in
// use today (DESIGN.md §2):
//   {"jobs": [{"id", "script" | "command" | "steps", "args"?, "gpus", "priority", "deps",
//              "est_hours", ...any submit-request field}],
//    "reservations": [{"name"?, "gpus": [indices], "jobs": [ids]}]}
// or a bare list of jobs. Each script is read and snapshotted, and its `#gpuq` headers apply;
// fields in the plan entry override header fields of the same key. A job's "steps" are
// [{"script": PATH, "args"?} | {"argv": [...]}, with "name", "timeout", "done_if", "image"?]:
// each step's script is snapshotted too, and its step headers apply (ScriptRole::kStep). A job
// with "array" ("0-9%2") or "grid" (["lr=1e-4,3e-4", "seed=0..4"]) and an optional
// "max_running" is a job array whose id is the array's name (docs/sweeps.md); "deps":
// ["shards"] waits for all its elements, "shards[3]" for one. The plans of the queues people
// move from are read as written (plan_paths.h): "~" and "$VAR" in paths, a "script" with its
// arguments, an entry that says nothing of GPUs (no "gpus", no gpus header, no lane) asks for
// one, and "produced_by", "produced_at_frac" and "first_look_frac" are kept for the simulator
// (SimulationHints), not sent.
// Validation happens here, before anything is sent: every finding names file:line, the first
// error is what load_plan returns, and check_plan returns all of them (for `gpuq lint`).
// Reads the plan and the scripts it names (check_plan_text: only the scripts, through the
// ScriptReader it is given); the only other I/O is a stat of each job's cwd; thread-safe.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/job.h"
#include "spec/diagnostic.h"
#include "spec/sweep.h"

namespace gpuq::spec {

struct PlanContext {
  std::string cwd;                         // absolute; each job's cwd unless it names its own
  std::map<std::string, std::string> env;  // each job's environment (an entry's "env" adds to it)
  // The daemon's [sweeps] max_elements when known (gpuq lint asks it): a larger sweep is an
  // error. 0: unknown, and a sweep over the default is a warning.
  size_t max_sweep_elements = 0;
  // Whether the request (the body of POST /v1/plans) is kept: `gpuq simulate` needs the specs
  // only, and each job's request is then dropped once its spec is read (Plan::request stays
  // null).
  bool keep_request = true;
  // What `~` and `$NAME` in the plan's paths expand from: the environment gpuq was run from
  // (plan_paths.h). Empty: a path that uses one is an error naming the variable.
  std::map<std::string, std::string> shell = {};
};

struct PlanReservation {
  std::string name;
  std::vector<int> gpus;
  int line = 0;
};

// What a plan entry says of its job for `gpuq simulate` alone; the daemon goes by the job's
// dependencies ("file:" ones for an input another job writes).
struct SimulationHints {
  // A job of the plan whose run writes this job's input ("produced_by"), and how far into
  // that run (0..1) it is written ("produced_at_frac", default 1: at its end). The simulated
  // job waits for that point. Empty: none.
  std::string produced_by;
  double produced_at_frac = 1.0;
  // How far into this job's run (0..1) its first result can be looked at ("first_look_frac");
  // the simulation reports that time. Unset: not reported.
  std::optional<double> first_look_frac;
};

struct Plan {
  // {"jobs": [submit request with "name" and "source"], "reservations": [{"name", "gpus",
  // "jobs"}]}: the body of POST /v1/plans.
  nlohmann::json request;
  std::vector<Diagnostic> warnings;
  // Each job's spec as the daemon reads it from `request` (reservation included, "source"
  // left out), in plan order, and the reservations: what `gpuq simulate` needs, without
  // reading or copying the request's JSON again.
  std::vector<JobSpec> specs;
  std::vector<PlanReservation> reservations;
  // One per spec: the job's sweep when it is a job array or grid (docs/sweeps.md), whose
  // elements `gpuq simulate` runs; its request keeps "array"/"grid"/"max_running" as written.
  std::vector<std::optional<Sweep>> sweeps;
  std::vector<SimulationHints> simulation;  // one per spec
};

// Loads and validates a plan; the error is the first finding, as "<file>:<line>: <message>".
Result<Plan> load_plan(const std::string& path, const PlanContext& context);

// A value written somewhere in a plan or a script header, and where.
struct Located {
  std::string text;
  std::string file;
  int line = 0;
};

// One step of a plan's job, where it is written: for `gpuq lint`.
struct PlanStep {
  int line = 0;             // where its object starts in the plan
  std::string script_path;  // its script as read (empty for a command)
};

// What `gpuq lint` needs to know about each job beyond the request.
struct PlanJob {
  std::string id;
  int line = 0;             // where its object starts in the plan
  std::string script_path;  // the script file as read (empty for a command)
  int gpus = 0;
  std::string cwd;                   // the job's working directory
  std::vector<std::string> outputs;  // declared `gpuq-out:` paths and globs
  std::vector<Located> wait_files;   // `file:` deps and wait_file entries
  std::vector<Located> requires_;    // REQUIRES shell tests
  std::vector<PlanStep> steps;       // a job with steps: each, in order
};

struct PlanCheck {
  nlohmann::json request;               // as in Plan; meaningful only without errors
  std::vector<JobSpec> specs;           // as in Plan, one per entry of `jobs`; likewise
  std::vector<std::optional<Sweep>> sweeps;  // as in Plan, one per spec; likewise
  std::vector<SimulationHints> simulation;   // as in Plan, one per spec; likewise
  std::vector<Diagnostic> diagnostics;  // errors and warnings, in the order found
  std::vector<PlanJob> jobs;            // the jobs that could be read
  std::vector<PlanReservation> reservations;
  bool has_errors() const;
};

// Every finding about a plan: a bad job does not stop the checks of the others.
PlanCheck check_plan(const std::string& path, const PlanContext& context);

// Reads a script that a plan names (an absolute or plan-relative path, normalised): its checked
// text (check_script_text), Code::kNotFound when there is no such file, or another error whose
// message names the file and the fix.
using ScriptReader = std::function<Result<std::string>(const std::string& path)>;

// The ScriptReader of check_plan and load_plan: the file system, through read_script.
Result<std::string> read_plan_script(const std::string& path);

// check_plan over a plan's text that the caller has read: `path` names the plan in messages and
// its directory is the base of relative script paths and cwds. check_plan is this plus reading
// the file, so tests and the fuzzer (fuzz/plan_fuzz.cc) can check plans without files.
PlanCheck check_plan_text(const std::string& path, std::string_view text,
                          const PlanContext& context,
                          const ScriptReader& read_script = read_plan_script);

}  // namespace gpuq::spec
