// SPDX-License-Identifier: Apache-2.0
// `gpuq fleet`'s command line (CLI11) and its dispatch: usage checks, the store's URL and
// options, opening the store, and the exit status of a fleet error.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "base/paths.h"
#include "cli/fleet_commands.h"

namespace gpuq::cli {
namespace {

constexpr const char* kFleetHelp =
    "the fleet's store: s3://BUCKET/PREFIX or dir:///PATH (default $GPUQ_FLEET)";

CLI::App* add_fleet_command(CLI::App& fleet, FleetParsed& p, const std::string& name,
                            const std::string& description, const char* json_help) {
  CLI::App* sub = fleet.add_subcommand(name, description);
  sub->add_option("--fleet", p.fleet, kFleetHelp)->type_name("URL");
  sub->add_flag("--json", p.json, json_help);
  sub->callback([&p, name] { p.command = name; });
  return sub;
}

void define_fleet_submit(CLI::App& fleet, FleetParsed& p) {
  FleetSubmitOptions& o = p.submit;
  auto* submit = add_fleet_command(fleet, p, "submit",
                                   "queue scripts in the fleet: a class queue (default any) or "
                                   "one node's queue",
                                   "print the jobs as one JSON array");
  submit->add_option("--class", o.klass, "the class queue (default any)")->type_name("CLASS");
  submit->add_option("--node", o.node, "pin the jobs to this node, or to GPU K of it: NODE-gpuK")
      ->type_name("NODE");
  submit->add_option("--name", o.name, "a name unique in the fleet (several files: NAME-1, ...)");
  submit->add_option_function<int>(
            "--gpus", [&o](const int& n) { o.gpus = n; }, "GPUs each job needs (default: header, 0)")
      ->type_name("N");
  submit->add_option("--priority", o.priority, "high, normal, low or 0..1000 (lower first)")
      ->type_name("P");
  submit->add_option("--after", o.after, "start after this fleet job succeeded; afterany:NAME after it ended, afternotok:NAME after "
                     "it failed or was cancelled (repeatable)")
      ->type_name("NAME|ID")
      ->allow_extra_args(false);
  submit->add_flag("--chain", o.chain, "with --node: each file after the one before it");
  submit->add_option("--env", o.env,
                     "a variable of the job (repeatable); nothing else of your environment "
                     "travels")
      ->type_name("K=V")
      ->allow_extra_args(false);
  submit
      ->add_option_function<std::string>(
          "--array", [&o](const std::string& text) { o.array = text; },
          "one job per index (0-99, 0-99:STEP, 1,4,9), named NAME.INDEX; no %MAX in a fleet")
      ->type_name("INDEXES");
  submit
      ->add_option("--grid", o.grid,
                   "one job per combination of parameters NAME=V1,V2 or NAME=A..B (repeatable), "
                   "named NAME.INDEX")
      ->type_name("NAME=VALUES")
      ->allow_extra_args(false);
  submit
      ->add_option("--step", o.steps,
                   "instead of files, one job of steps, in order (repeatable): a script and its "
                   "arguments, or a command, as gpuq submit --step")
      ->type_name("TEXT")
      ->allow_extra_args(false);
  auto container = [&](const char* flag, std::optional<std::string>& into, const char* what,
                       const char* type) {
    submit
        ->add_option_function<std::string>(
            flag, [&into](const std::string& v) { into = v; }, what)
        ->type_name(type);
  };
  container("--image", o.image, "run the jobs in containers of this image", "IMAGE");
  container("--pull", o.pull, "with --image: pull it when missing (the default), always, or never",
            "POLICY");
  container("--container-user", o.container_user, "with --image: the user inside", "UID:GID");
  submit->add_option("file", o.files, "job scripts (none with --step)");
}

void define_fleet_jobs(CLI::App& fleet, FleetParsed& p) {
  add_fleet_command(fleet, p, "show", "show one fleet job: spec, claim, state",
                    "print the job as JSON")
      ->add_option("job", p.ref, "fleet job id or name")
      ->required();
  auto* logs = add_fleet_command(fleet, p, "logs", "print a fleet job's log from the store",
                                 "print {id, attempt, log} as JSON");
  logs->add_option("job", p.logs.ref, "fleet job id or name")->required();
  logs->add_option("--attempt", p.logs.attempt, "which attempt (default: the current one)")
      ->type_name("N");
  logs->add_flag("-f,--follow", p.logs.follow, "keep printing until the job has ended");
  add_fleet_command(fleet, p, "cancel", "cancel a fleet job (its holder stops it)",
                    "print {id, name, result} as JSON")
      ->add_option("job", p.ref, "fleet job id or name")
      ->required();
}

void define_fleet_data(CLI::App& fleet, FleetParsed& p) {
  auto* push = add_fleet_command(fleet, p, "push",
                                 "put a file in the fleet's data store (where # gpuq-in: inputs come from)",
                                 "print {path, key, store, file, size, etag, seconds} as JSON");
  push->add_option("file", p.data.file, "the local file")->required();
  push->add_option("path", p.data.path, "its path in the data store, as a # gpuq-in: line names it")->required();
  auto* pull = add_fleet_command(fleet, p, "pull",
                                 "get a file of the fleet's data store (# gpuq-out: outputs are there)",
                                 "print {path, key, store, file, size, etag, seconds} as JSON");
  pull->add_option("path", p.data.path, "its path in the data store, as a # gpuq-out: line names it")->required();
  pull->add_option("file", p.data.file, "the local file to write (replaced once whole and checked)")->required();
}

void define_fleet_nodes(CLI::App& fleet, FleetParsed& p) {
  auto* status = add_fleet_command(fleet, p, "status", "show the fleet's nodes and jobs",
                                   "print {nodes, jobs, queues, not_shown} as JSON");
  status->add_flag("--all", p.status.all, "show every queue entry (reads each one's spec and claim)");
  status
      ->add_option_function<size_t>(
          "--limit", [&p](const size_t& n) { p.status.limit = n; },
          "show the best N waiting jobs (default 20; 0: all), besides the running ones")
      ->type_name("N");
  add_fleet_command(fleet, p, "drain", "let a node take no new jobs (running ones finish)",
                    "print {node, draining} as JSON")
      ->add_option("node", p.node, "node name")
      ->required();
  add_fleet_command(fleet, p, "undrain", "let a drained node take jobs again",
                    "print {node, draining} as JSON")
      ->add_option("node", p.node, "node name")
      ->required();
  auto* move = add_fleet_command(fleet, p, "move",
                                 "re-pin the jobs pinned to one node to another (a dead node's "
                                 "running jobs once it is stale)",
                                 "print {from, to, jobs} as JSON");
  move->add_option("--from", p.from, "the node whose pinned jobs move")->type_name("NODE")->required();
  move->add_option("--to", p.to, "the node they move to (up, with a fresh heartbeat)")
      ->type_name("NODE")
      ->required();
}

// Checks that need neither the store nor a file, so a wrong command line touches nothing.
Status check_fleet_usage(const FleetParsed& p) {
  auto bad = [](std::string message) { return fail(Code::kInvalidArgument, std::move(message)); };
  if (p.command == "submit") {
    const FleetSubmitOptions& o = p.submit;
    if (!o.klass.empty() && !o.node.empty()) {
      return bad("--class and --node together: a job goes to a class queue or to one node's "
                 "queue; give one of them");
    }
    if (o.files.empty() == o.steps.empty()) {
      return bad(o.files.empty()
                     ? "give one or more job scripts (file ...), or the steps of one "
                       "job (--step TEXT ...)"
                     : "--step and job scripts (file ...) together: --step makes one "
                       "job of its steps; give the scripts as steps, or leave out --step");
    }
    if (o.chain && o.node.empty()) {
      return bad("--chain needs --node: a chain runs on one node, each job after the one before");
    }
  }
  if (p.command == "status" && p.status.all && p.status.limit) {
    return bad("--all and --limit together: --all shows every job, --limit N the best N");
  }
  if (p.command == "logs") {
    if (p.logs.attempt < 0) return bad("--attempt is 1 or more");
    if (p.logs.follow && p.json) return bad("--json prints the log once; leave out -f");
  }
  return ok();
}

int dispatch(Context& ctx, fleet::ObjectStore& store, const FleetParsed& p) {
  if (p.command == "submit") return run_fleet_submit(ctx, store, p.submit, p.json);
  if (p.command == "status") return run_fleet_status(ctx, store, p.status, p.json);
  if (p.command == "show") return run_fleet_show(ctx, store, p.ref, p.json);
  if (p.command == "logs") return run_fleet_logs(ctx, store, p.logs, p.json);
  if (p.command == "cancel") return run_fleet_cancel(ctx, store, p.ref, p.json);
  if (p.command == "drain" || p.command == "undrain") {
    return run_fleet_drain(ctx, store, p.node, p.command == "drain", p.json);
  }
  if (p.command == "move") return run_fleet_move(ctx, store, p.from, p.to, p.json);
  return ctx.report(kExitUsage, "gpuq fleet: give a command: status, submit, show, logs, "
                                "cancel, drain, undrain, move, push or pull");
}

}  // namespace

void define_fleet_command(CLI::App& app, FleetParsed& p, bool with_options) {
  CLI::App* fleet = app.add_subcommand(
      "fleet", "work with a fleet of nodes that share a bucket (docs/fleet.md); no daemon needed");
  if (!with_options) return;
  fleet->require_subcommand(1);
  define_fleet_nodes(*fleet, p);
  define_fleet_submit(*fleet, p);
  define_fleet_jobs(*fleet, p);
  define_fleet_data(*fleet, p);
}

Outcome<std::string> fleet_url(const std::string& flag, const std::vector<std::string>& environ,
                               const std::string& configured) {
  if (!flag.empty()) return flag;
  constexpr std::string_view kVariable = "GPUQ_FLEET=";
  for (const auto& entry : environ) {
    if (entry.starts_with(kVariable) && entry.size() > kVariable.size()) {
      return entry.substr(kVariable.size());
    }
  }
  if (!configured.empty()) return configured;
  return cli_fail(kExitUsage,
                  "which fleet? give --fleet s3://BUCKET/PREFIX (or dir:///PATH), set GPUQ_FLEET, "
                  "or set url under [fleet] in config.toml");
}

fleet::StoreOptions fleet_store_options(const config::FleetConfig& configured) {
  fleet::StoreOptions options;
  options.timeout_ms = configured.timeout_ms;
  options.part_size = configured.part_size;
  options.transfers = configured.transfers;
  options.endpoint = configured.endpoint;
  options.region = configured.region;
  options.access_key_id = configured.access_key_id;
  options.secret_access_key = configured.secret_access_key;
  options.session_token = configured.session_token;
  return fleet::with_aws_environment(std::move(options));
}

Result<std::unique_ptr<fleet::ObjectStore>> open_fleet_store(const std::string& url,
                                                             const config::FleetConfig& configured) {
  return fleet::open_store(url, fleet_store_options(configured));
}

int report_fleet_error(Context& ctx, const Error& error) {
  switch (error.code) {
    case Code::kInvalidArgument: return ctx.report(kExitUsage, error.message);
    case Code::kUnavailable: return ctx.report(kExitNoDaemon, error.message);
    default: return ctx.report(kExitFailed, error.message);
  }
}

int run_fleet(const Io& io, const FleetParsed& parsed) {
  Context ctx(io, "", false);
  if (auto st = check_fleet_usage(parsed); !st) {
    return ctx.report(kExitUsage, fmt::format("{}\nRun 'gpuq fleet {} --help' for usage.",
                                              st.error().message, parsed.command));
  }
  // [fleet] of the daemon's config.toml, when there is one: its url and credentials.
  config::FleetConfig configured;
  if (auto home = resolve_home(parsed.home); home) {
    auto loaded = config::load_config(*home + "/" + std::string(config::kConfigFileName));
    if (!loaded) return ctx.report(kExitUsage, loaded.error().message);
    configured = loaded->fleet;
  }
  auto url = fleet_url(parsed.fleet, io.environ, configured.url);
  if (!url) return ctx.report(url.error());
  if (parsed.command == "push" || parsed.command == "pull") {
    // The data store, as a node finds it: [fleet] data, else PREFIX/data/ of the fleet's store.
    const std::string data_url = configured.data.empty() ? *url : configured.data;
    auto data = io.open_fleet ? io.open_fleet(data_url) : open_fleet_store(data_url, configured);
    if (!data) return report_fleet_error(ctx, data.error());
    return run_fleet_move_data(ctx, **data, configured.data.empty() ? "data/" : "", parsed.data,
                               parsed.command == "push", parsed.json);
  }
  auto store = io.open_fleet ? io.open_fleet(*url) : open_fleet_store(*url, configured);
  if (!store) return report_fleet_error(ctx, store.error());
  return dispatch(ctx, **store, parsed);
}

}  // namespace gpuq::cli
