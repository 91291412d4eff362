// SPDX-License-Identifier: Apache-2.0
// `gpuq submit`: checks the command line, snapshots the script (or each step's:
// cli/submit_steps.h), environment (what of it: cli/submit_env.h) and working directory into a
// submit request (docs/api.md), and sends it. A script's `#gpuq` header fields come first and the
// flags override them. `gpuq submit PLAN.json` sends a plan (POST /v1/plans) instead.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <map>

#include "base/heap.h"
#include "base/time.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/submit_directory.h"
#include "cli/submit_env.h"
#include "cli/submit_steps.h"
#include "config/config.h"
#include "model/image_ref.h"
#include "model/job.h"
#include "spec/headers.h"
#include "spec/plan.h"
#include "spec/script.h"
#include "spec/sweep.h"

namespace gpuq::cli {
namespace {

Outcome<std::map<std::string, std::string>> build_env(const std::vector<std::string>& environ,
                                                      const SubmitOptions& options) {
  auto env = job_environment(environ, options.env, options.clean_env);
  if (!env) return cli_fail(kExitUsage, env.error().message);
  return std::move(*env);
}

// `flag` (or the header's `cwd`) made absolute against the current directory `cwd`.
Outcome<std::string> working_directory(const std::string& flag, const std::string& cwd) {
  namespace fs = std::filesystem;
  fs::path dir = flag.empty() ? fs::path(cwd) : fs::path(flag);
  if (dir.is_relative()) dir = fs::path(cwd) / dir;
  dir = dir.lexically_normal();
  std::string text = dir.string();
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return cli_fail(kExitUsage,
                    fmt::format("--cwd {}: no such directory", flag.empty() ? text : flag));
  }
  return text;
}

Status check_duration(const char* flag, const std::optional<std::string>& value) {
  if (!value) return ok();
  auto parsed = parse_duration(*value);
  if (!parsed) return fail(Code::kInvalidArgument, fmt::format("{}: {}", flag, parsed.error().message));
  return ok();
}

// `--not-before` as an absolute time: RFC 3339, or "+DUR" from `now_ms`.
Outcome<int64_t> resolve_not_before(const std::string& text, int64_t now_ms) {
  auto bad = [&](const std::string& why) {
    return cli_fail(kExitUsage,
                    fmt::format("bad --not-before '{}': {}; give a time such as "
                                "2026-11-29T22:00:00Z or a delay such as +2h",
                                text, why));
  };
  if (text.starts_with("+")) {
    auto delay = parse_duration(text.substr(1));
    if (!delay) return bad(delay.error().message);
    return now_ms + delay->count();
  }
  auto at = parse_rfc3339(text);
  if (!at) return bad(at.error().message);
  return *at;
}

// --image, --pull and --container-user, each on its own (whether the job has an image at all is
// known once the headers are read: apply_container_flags).
Status check_container_flags(const SubmitOptions& options) {
  auto with_flag = [](const char* flag, const Error& error) {
    return fail(Code::kInvalidArgument, fmt::format("{}: {}", flag, error.message));
  };
  if (options.image) {
    if (auto st = check_image_reference(*options.image); !st)
      return with_flag("--image", st.error());
  }
  if (options.pull) {
    if (auto policy = parse_pull_policy(*options.pull); !policy)
      return with_flag("--pull", policy.error());
  }
  if (options.container_user) {
    if (auto st = check_container_user(*options.container_user); !st) {
      return with_flag("--container-user", st.error());
    }
  }
  return ok();
}

// The flags' values that need no file or daemon, checked before anything is read.
Status check_flags(const SubmitOptions& options) {
  auto bad = [](std::string message) { return fail(Code::kInvalidArgument, std::move(message)); };
  if (options.gpus && *options.gpus < 0) {
    return bad(fmt::format("--gpus must be 0 or more, not {}", *options.gpus));
  }
  if (!options.priority.empty()) {
    if (auto priority = parse_priority(options.priority); !priority) {
      return bad(priority.error().message);
    }
  }
  if (options.retries && *options.retries < 0) {
    return bad(fmt::format("--retries must be 0 or more, not {}", *options.retries));
  }
  if (options.gpu_mem && *options.gpu_mem < 0) {
    return bad(fmt::format("--gpu-mem must be 0 or more MiB, not {}", *options.gpu_mem));
  }
  if (options.done_if && options.done_if->empty()) {
    return bad("--done-if needs a shell command, as in --done-if 'test -s out/eval.json'");
  }
  if (auto st = check_container_flags(options); !st) return st;
  if (auto st = check_duration("--retry-delay", options.retry_delay); !st) return st;
  if (auto st = check_duration("--timeout", options.timeout); !st) return st;
  if (auto st = check_duration("--est", options.est); !st) return st;
  if (auto st = check_duration("--restart-within", options.restart_within); !st) return st;
  if (auto st = check_duration("--requires-warn", options.requires_warn); !st) return st;
  if (auto st = check_duration("--quiet", options.quiet); !st) return st;
  if (auto st = check_duration("--warn-after", options.warn_after); !st) return st;
  if (options.array && !options.grid.empty()) {
    return bad("--array and --grid: give one (a grid's elements are numbered as an array's)");
  }
  // The sweep's form is checked here; its size against the daemon's [sweeps] max_elements by
  // the daemon (config.toml is the daemon's), here only against the most that may allow.
  const auto most = static_cast<size_t>(config::kMostSweepElements);
  if (options.array) {
    if (auto sweep = spec::parse_array(*options.array, most); !sweep) return bad(sweep.error().message);
  }
  if (!options.grid.empty()) {
    std::vector<spec::SweepParam> params;
    for (const auto& text : options.grid) {
      auto param = spec::parse_grid_param(text, most);
      if (!param) return bad(param.error().message);
      params.push_back(std::move(*param));
    }
    if (auto sweep = spec::make_grid(std::move(params), 0, most); !sweep) return bad(sweep.error().message);
  }
  // A script's header may give the sweep that --max-running caps (build_submit_request checks).
  const bool no_script = options.command_mode || !options.steps.empty();  // so no header
  const bool no_sweep = !options.array && options.grid.empty() && no_script;
  if (options.max_running && (*options.max_running < 1 || no_sweep)) {
    return bad(*options.max_running < 1 ? "--max-running must be 1 or more"
                                        : "--max-running caps an array or a grid: give --array or --grid");
  }
  if (options.preempt) {
    if (auto mode = parse_preempt_mode(*options.preempt); !mode) {
      return bad(fmt::format("--preempt: {}", mode.error().message));
    }
  }
  struct ListFlag {
    const char* flag;
    const std::vector<std::string>& values;
  };
  for (const ListFlag& list : {ListFlag{"--after", options.after},
                               ListFlag{"--after-any", options.after_any},
                               ListFlag{"--after-notok", options.after_notok},
                               ListFlag{"--requires", options.requires_commands},
                               ListFlag{"--wait-file", options.wait_files},
                               ListFlag{"--lane", options.lanes}}) {
    for (const auto& value : list.values) {
      if (value.empty()) return bad(fmt::format("{} needs a value, not an empty one", list.flag));
    }
  }
  return ok();
}

// The `#gpuq` header fields of a script (submit-request keys), in the CLI's JSON form.
Outcome<Json> script_header_fields(const std::string& script, const std::string& text) {
  auto headers = spec::parse_script_headers(script, text);
  if (!headers) return cli_fail(kExitUsage, headers.error().message);
  Json fields = Json::parse(
      headers->fields.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), nullptr, false);
  if (!fields.is_object()) return Json::object();
  return fields;
}

// Removes `key` from `fields` and returns its value (null when absent).
Json take(Json& fields, const char* key) {
  auto it = fields.find(key);
  if (it == fields.end()) return Json();
  Json value = std::move(*it);
  fields.erase(it);
  return value;
}

// Sets the container fields the flags give, replacing the header's; then --pull and
// --container-user need an image: the job's (--image, image=) or a step's (a step script's image=).
Status apply_container_flags(const SubmitOptions& options, Json& request) {
  if (options.image) request["image"] = *options.image;
  if (options.pull) request["pull"] = *options.pull;
  if (options.container_user) request["container_user"] = *options.container_user;
  bool any_image = request.contains("image");
  for (const auto& step : request.contains("steps") ? request["steps"] : Json::array()) {
    any_image = any_image || step.contains("image");
  }
  if (any_image) return ok();
  for (const auto& [flag, given] :
       {std::pair{"--pull", options.pull.has_value()},
        std::pair{"--container-user", options.container_user.has_value()}}) {
    if (!given) continue;
    return fail(Code::kInvalidArgument,
                fmt::format("{} applies only to a job that runs in a container: give --image IMAGE "
                            "too, or leave {} out",
                            flag, flag));
  }
  return ok();
}

// Sets the scheduling fields the flags give, replacing what the header said. Each duration
// and time has two spellings (`timeout`, `timeout_ms`); a flag replaces both.
Status apply_scheduling_flags(const SubmitOptions& options, int64_t now_ms, Json& request) {
  auto set_list = [&](const char* key, const std::vector<std::string>& values) {
    if (!values.empty()) request[key] = values;
  };
  set_list("after", options.after);
  set_list("after_any", options.after_any);
  set_list("after_notok", options.after_notok);
  set_list("requires", options.requires_commands);
  set_list("wait_file", options.wait_files);
  if (!options.lanes.empty()) {
    request.erase("lane");
    request["lanes"] = options.lanes;
  }
  if (options.done_if) request["done_if"] = *options.done_if;
  if (options.retries) request["retries"] = *options.retries;
  auto set_duration = [&](const char* key, const std::optional<std::string>& value) {
    if (!value) return;
    request.erase(std::string(key) + "_ms");
    request[key] = *value;
  };
  set_duration("retry_delay", options.retry_delay);
  set_duration("timeout", options.timeout);
  set_duration("est", options.est);
  if (options.gpu_mem) request["gpu_mem"] = *options.gpu_mem;
  if (options.share) request["share"] = true;
  if (options.not_before) {
    auto at = resolve_not_before(*options.not_before, now_ms);
    if (!at) return fail(Code::kInvalidArgument, at.error().message);
    request.erase("not_before_ms");
    request["not_before"] = format_rfc3339(*at);
  }
  if (options.hold) request["hold"] = true;
  if (options.preempt) request["preempt"] = *options.preempt;
  set_duration("restart_within", options.restart_within);
  set_duration("requires_warn", options.requires_warn);
  set_duration("quiet", options.quiet);
  set_duration("warn_after", options.warn_after);
  return ok();
}

// The sweep of the flags, replacing the header's (`#gpuq array=`, `grid=`, `max-running=`):
// --array or --grid replaces all three, --max-running the cap alone (array='s %MAX with it).
Status apply_sweep_flags(const SubmitOptions& options, Json& request) {
  if (options.array || !options.grid.empty()) {
    for (const char* key : {"array", "grid", "max_running"}) request.erase(key);
  }
  if (options.array) request["array"] = *options.array;
  if (!options.grid.empty()) request["grid"] = options.grid;
  if (options.max_running) {
    request["max_running"] = *options.max_running;
    if (request.contains("array") && request["array"].is_string()) {
      std::string array = request["array"].get<std::string>();
      request["array"] = array.substr(0, array.rfind('%'));
    }
  }
  if (request.contains("max_running") && !request.contains("array") && !request.contains("grid")) {
    return fail(Code::kInvalidArgument,
                "--max-running caps an array or a grid: give --array or --grid (or array= or "
                "grid= in the script's #gpuq header)");
  }
  return ok();
}

// `restart_within` limits when a restart may happen, so it needs preempt=restart, whether
// each came from a flag or from the script's header.
Status check_preemption(const SubmitOptions& options, const Json& request) {
  if (!request.contains("restart_within") && !request.contains("restart_within_ms")) return ok();
  std::string mode = request.contains("preempt") && request["preempt"].is_string()
                         ? request["preempt"].get<std::string>()
                         : "never";
  if (mode == "restart") return ok();
  if (options.restart_within) {
    return fail(Code::kInvalidArgument,
                fmt::format("--restart-within needs --preempt restart (the job's preempt mode is "
                            "{}): it limits how long a run may still be stopped and rerun",
                            mode));
  }
  return fail(Code::kInvalidArgument,
              fmt::format("--preempt {}: the script's header sets restart-within=, which applies "
                          "only to preempt=restart; give --preempt restart or remove "
                          "restart-within= from the header",
                          mode));
}

// The flags given that have no meaning for a plan (it says all of that itself).
std::vector<std::string> flags_not_for_plans(const SubmitOptions& o) {
  std::vector<std::string> given;
  auto add = [&](bool is_given, const char* flag) {
    if (is_given) given.emplace_back(flag);
  };
  add(!o.name.empty(), "--name");
  add(o.gpus.has_value(), "--gpus");
  add(!o.priority.empty(), "--priority");
  add(!o.after.empty(), "--after");
  add(!o.after_any.empty(), "--after-any");
  add(!o.after_notok.empty(), "--after-notok");
  add(!o.requires_commands.empty(), "--requires");
  add(o.done_if.has_value(), "--done-if");
  add(!o.wait_files.empty(), "--wait-file");
  add(!o.lanes.empty(), "--lane");
  add(o.retries.has_value(), "--retries");
  add(o.retry_delay.has_value(), "--retry-delay");
  add(o.timeout.has_value(), "--timeout");
  add(o.est.has_value(), "--est");
  add(o.gpu_mem.has_value(), "--gpu-mem");
  add(o.share, "--share");
  add(o.not_before.has_value(), "--not-before");
  add(o.hold, "--hold");
  add(o.preempt.has_value(), "--preempt");
  add(o.restart_within.has_value(), "--restart-within");
  add(o.requires_warn.has_value(), "--requires-warn");
  add(o.quiet.has_value(), "--quiet");
  add(o.warn_after.has_value(), "--warn-after");
  add(o.array.has_value(), "--array");
  add(!o.grid.empty(), "--grid");
  add(o.max_running.has_value(), "--max-running");
  add(!o.steps.empty(), "--step");
  add(o.image.has_value(), "--image");
  add(o.pull.has_value(), "--pull");
  add(o.container_user.has_value(), "--container-user");
  return given;
}

// The words after PLAN.json: `gpuq submit PLAN.json --replace` reads naturally, but CLI11
// hands everything after the first word to the positional, so the flags a plan takes are
// picked out here. Anything else is an error.
Status take_plan_flags(SubmitOptions& options) {
  const std::string path = options.words.front();
  std::vector<std::string> rest(options.words.begin() + 1, options.words.end());
  options.words.resize(1);
  for (size_t i = 0; i < rest.size(); ++i) {
    const std::string& word = rest[i];
    auto value = [&](std::string_view flag) -> std::optional<std::string> {
      std::string prefix = std::string(flag) + "=";
      if (word.starts_with(prefix)) return word.substr(prefix.size());
      if (word == flag && i + 1 < rest.size()) return rest[++i];
      return std::nullopt;
    };
    if (word == "--replace") {
      options.replace = true;
    } else if (word == "--json") {
      options.json = true;
    } else if (word == "--id-only") {
      options.id_only = true;
    } else if (word == "--clean-env") {
      options.clean_env = true;
    } else if (word == "--cwd" || word.starts_with("--cwd=")) {
      auto dir = value("--cwd");
      if (!dir) return fail(Code::kInvalidArgument, "--cwd needs a directory");
      options.cwd = *dir;
    } else if (word == "--env" || word.starts_with("--env=")) {
      auto entry = value("--env");
      if (!entry) return fail(Code::kInvalidArgument, "--env needs KEY=VALUE");
      options.env.push_back(*entry);
    } else if (word.starts_with("-")) {
      return fail(Code::kInvalidArgument,
                  fmt::format("{} with a plan: a plan says that for each of its jobs; with {} "
                              "only --replace, --json, --id-only, --cwd, --env and --clean-env apply",
                              word, path));
    } else {
      return fail(Code::kInvalidArgument,
                  fmt::format("a plan takes no arguments: {} {} ...", path, word));
    }
  }
  return ok();
}

// Reads the plan named by the words into a POST /v1/plans request; warnings go to `err`.
// `options` is the command line with the plan's own flags picked out.
Outcome<Json> load_plan_request(SubmitOptions& options, const Io& io) {
  const std::string path = options.words.front();
  if (auto st = take_plan_flags(options); !st) return cli_fail(kExitUsage, st.error().message);
  if (options.json && options.id_only) {
    return cli_fail(kExitUsage, "--json and --id-only: choose one");
  }
  if (auto flags = flags_not_for_plans(options); !flags.empty()) {
    return cli_fail(kExitUsage,
                    fmt::format("{} with a plan: a plan says that for each of its jobs; with "
                                "{} only --replace, --json, --id-only, --cwd, --env and --clean-env apply",
                                fmt::join(flags, ", "), path));
  }
  auto dir = working_directory(options.cwd, io.cwd);
  if (!dir) return tl::unexpected(dir.error());
  auto env = build_env(io.environ, options);
  if (!env) return tl::unexpected(env.error());
  prepare_heap_for_file(path);  // a large plan becomes many small objects at once
  spec::PlanContext context{*dir, *env};
  context.shell = environment_map(io.environ);
  for (const auto& [name, value] : *env) context.shell[name] = value;  // --env's values too
  auto plan = spec::load_plan(path, context);
  if (!plan) return cli_fail(kExitUsage, plan.error().message);
  for (const auto& warning : plan->warnings) *io.err << warning.text() << '\n';
  Json request = Json::parse(
      plan->request.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), nullptr, false);
  if (!request.is_object()) {
    return cli_fail(kExitFailed, path + ": the plan reader did not return an object");
  }
  return request;
}

}  // namespace

Outcome<Json> build_submit_request(const SubmitOptions& options,
                                   const std::vector<std::string>& environ, const std::string& cwd,
                                   int64_t now_ms) {
  if (auto st = check_flags(options); !st) return cli_fail(kExitUsage, st.error().message);
  if (options.replace) {
    return cli_fail(kExitUsage, "--replace is for plans: gpuq submit PLAN.json --replace");
  }
  auto env = build_env(environ, options);
  if (!env) return tl::unexpected(env.error());
  const bool with_steps = !options.steps.empty();
  if (with_steps && !options.words.empty()) {
    return cli_fail(kExitUsage,
                    fmt::format("--step and {} '{}': with --step, the steps say what runs; make it "
                                "a step too, as in --step '{}'",
                                options.command_mode ? "a command after --" : "a script",
                                options.words.front(), options.words.front()));
  }
  if (options.words.empty() && !with_steps) {
    return cli_fail(kExitUsage,
                    options.command_mode
                        ? "nothing to run after '--': give a command, as in "
                          "'gpuq submit -- python train.py'"
                        : "nothing to run: give a script ('gpuq submit train.sh ARGS...'), a "
                          "command after -- ('gpuq submit -- python train.py') or steps "
                          "(--step prepare.sh --step 'train.sh --lr 3e-4')");
  }
  Json header = Json::object();
  Json what;  // the "steps", "argv" or "script" field
  if (with_steps) {
    auto steps = steps_request(options.steps);
    if (!steps) return tl::unexpected(steps.error());
    what = std::move(*steps);
  } else if (options.command_mode) {
    what = options.words;
  } else {
    const std::string& script = options.words.front();
    auto text = spec::read_script(script);
    if (!text) return cli_fail(kExitUsage, text.error().message);
    auto fields = script_header_fields(script, *text);
    if (!fields) return tl::unexpected(fields.error());
    header = std::move(*fields);
    what = {
        {"name", script},
        {"text", *text},
        {"args", std::vector<std::string>(options.words.begin() + 1, options.words.end())},
    };
  }
  // The submitter decides where and with what the job runs, and what it is.
  for (const char* key : {"env", "argv", "script"}) header.erase(key);

  Json request = Json::object();
  Json name = take(header, "name");
  if (!options.name.empty()) name = options.name;
  if (!name.is_null()) request["name"] = std::move(name);
  Json gpus = take(header, "gpus");
  if (options.gpus) gpus = *options.gpus;
  if (!gpus.is_null()) request["gpus"] = std::move(gpus);  // unsaid: 0, or 1 in the GPU lane
  Json priority = take(header, "priority");
  if (!options.priority.empty()) priority = *parse_priority(options.priority);  // checked
  if (!priority.is_null()) request["priority"] = std::move(priority);
  Json header_cwd = take(header, "cwd");
  std::string cwd_flag = options.cwd;
  if (cwd_flag.empty() && header_cwd.is_string()) cwd_flag = header_cwd.get<std::string>();
  auto dir = working_directory(cwd_flag, cwd);
  if (!dir) return tl::unexpected(dir.error());
  request["cwd"] = *dir;
  request["env"] = Json(*env);
  request[with_steps ? "steps" : options.command_mode ? "argv" : "script"] = std::move(what);
  for (auto& [key, value] : header.items()) request[key] = std::move(value);
  if (auto st = apply_container_flags(options, request); !st) {
    return cli_fail(kExitUsage, st.error().message);
  }
  if (auto st = apply_sweep_flags(options, request); !st)
    return cli_fail(kExitUsage, st.error().message);
  if (auto st = apply_scheduling_flags(options, now_ms, request); !st) {
    return cli_fail(kExitUsage, st.error().message);
  }
  if (auto st = check_preemption(options, request); !st) {
    return cli_fail(kExitUsage, st.error().message);
  }
  return request;
}

namespace {

// A queued sweep (`answer` holds its "array" and "jobs", as POST /v1/jobs and each array job of
// POST /v1/plans answer): its elements' ids, one a line, with --id-only, else one line for the
// array after `verb` ("submitted", "created", "existing").
int print_sweep(Context& ctx, const Json& answer, const SubmitOptions& options,
                std::string_view verb = "submitted") {
  const Json& jobs = json_array(answer, "jobs");
  if (options.id_only) {
    for (const auto& job : jobs) {
      auto id = json_int(job, "id");
      if (!id) return ctx.report(kExitFailed, "the daemon's answer names a job without an id");
      ctx.out() << *id << '\n';
    }
    return kExitOk;
  }
  const Json& array = answer["array"];
  auto first = jobs.empty() ? std::nullopt : json_int(jobs.front(), "id");
  auto last = jobs.empty() ? std::nullopt : json_int(jobs.back(), "id");
  ctx.out() << fmt::format("{} array {} ({}, {} element{}{})\n", verb,
                           json_int(array, "id").value_or(0), json_string(array, "name"),
                           jobs.size(), jobs.size() == 1 ? "" : "s",
                           first && last ? fmt::format(": jobs {}-{}", *first, *last) : "");
  return kExitOk;
}

}  // namespace

bool is_plan_submit(const SubmitOptions& options) {
  return !options.command_mode && !options.words.empty() && options.words.front().ends_with(".json");
}

int send_plan(Context& ctx, Json request, const SubmitOptions& options) {
  if (options.replace) request["replace"] = true;
  auto response = ctx.client().post("/v1/plans", json_text(request));
  if (!response) return ctx.report(response.error());
  if (options.json) return print_body(ctx, response->body);
  auto answer = parse_json(response->body);
  if (!answer) return ctx.report(answer.error());
  for (const auto& job : json_array(*answer, "jobs")) {
    if (job.contains("array") && job["array"].is_object()) {  // a job array of the plan
      if (int status = print_sweep(ctx, job, options, json_string(job, "result", "submitted"));
          status != kExitOk) {
        return status;
      }
    } else if (options.id_only) {
      auto id = json_int(job, "id");
      if (!id) return ctx.report(kExitFailed, "the daemon's answer names a job without an id");
      ctx.out() << *id << '\n';
    } else {
      ctx.out() << json_string(job, "result", "submitted") << ' ' << job_label(job) << '\n';
    }
  }
  return kExitOk;
}

int run_submit(Context& ctx, const SubmitOptions& options) {
  if (is_directory_submit(options)) {
    auto request = directory_plan_request(options, ctx.io(), ctx.err());
    if (!request) return ctx.report(request.error());
    return send_plan(ctx, std::move(*request), options);
  }
  if (is_plan_submit(options)) {
    SubmitOptions plan_options = options;
    auto request = load_plan_request(plan_options, ctx.io());
    if (!request) return ctx.report(request.error());
    return send_plan(ctx, std::move(*request), plan_options);
  }
  auto request =
      build_submit_request(options, ctx.io().environ, ctx.io().cwd, ctx.io().wall_ms());
  if (!request) return ctx.report(request.error());
  auto response = ctx.client().post("/v1/jobs", json_text(*request));
  if (!response) return ctx.report(response.error());
  if (options.json) {
    return print_body(ctx, response->body);
  }
  auto job = parse_json(response->body);
  if (!job) return ctx.report(job.error());
  // A sweep's answer is {"array": {...}, "jobs": [...]}; a job's own "array" is an id or null.
  if (job->contains("jobs") && (*job)["array"].is_object()) return print_sweep(ctx, *job, options);
  if (options.id_only) {
    auto id = json_int(*job, "id");
    if (!id) return ctx.report(kExitFailed, "the daemon's answer has no job id");
    ctx.out() << *id << '\n';
  } else {
    ctx.out() << "submitted " << job_label(*job) << '\n';
  }
  return kExitOk;
}

}  // namespace gpuq::cli
