// SPDX-License-Identifier: Apache-2.0
#include "cli/app.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>

#include "base/listen_address.h"
#include "base/paths.h"
#include "base/token_file.h"
#include "cli/client_cli.h"
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/fleet_commands.h"
#include "cli/gpu_selection.h"
#include "cli/token_scope.h"

namespace gpuq::cli {
namespace {

// Every option the command line can hold; CLI11 writes into it.
struct Parsed : ClientOptions {
  DashboardOptions dashboard;
  DaemonFlags daemon;
  EventsOptions events;
  GpusOptions gpus;
  HooksOptions hooks;
  GcOptions gc;
  ReportOptions report;
  CheckOptions check;
  ServiceOptions service;
  LintOptions lint;
  SimulateOptions simulate;
  FleetParsed fleet;
  DocsOptions docs;
};

// `gpuq service install|uninstall`: the daemon as a systemd unit. `--home` is the one of
// every command; given, it is written into the unit.
void define_service_command(CLI::App& app, Parsed& p) {
  auto* service = add_command(app, p, "service", "run the daemon as a systemd service");
  if (service == nullptr) return;
  service->require_subcommand(1);
  ServiceOptions& o = p.service;
  auto common = [&](CLI::App* sub) {
    sub->add_option("--home", p.home, "the daemon's state directory (written into the unit)")
        ->type_name("DIR");
    sub->add_flag("--user", o.user,
                  "a user unit ($XDG_CONFIG_HOME/systemd/user; systemctl --user) instead of a "
                  "system unit (/etc/systemd/system)");
    sub->add_option("--unit-dir", o.unit_dir, "use this directory instead (packaging, tests)")
        ->type_name("DIR");
  };
  auto* install = service->add_subcommand(
      "install",
      "write the systemd unit gpuq.service (runs survive a daemon restart) and print the "
      "systemctl commands to run next");
  common(install);
  install->add_flag("--print", o.print, "print the unit; write nothing");
  install->add_flag("--force", o.force, "replace an existing, different unit file");
  install->add_option("--executable", o.executable, "the gpuq the unit runs (default: this one; packaging)")
      ->type_name("PATH");
  install->add_option("--gpus", o.gpus, "the daemon's --gpus: auto, none, fake:N or 0,2,3")
      ->type_name("SPEC");
  auto* run_as = install->add_option(
      "--run-as", o.run_as, "system unit: run the daemon as this user, for that user alone (default: root, "
      "serving the box's users with --system, docs/lab.md)");
  run_as->type_name("USER");
  install->add_option("--env", o.env, "an Environment= of the daemon and its hooks (repeatable)")
      ->type_name("K=V")
      ->allow_extra_args(false);
  run_as->excludes(install->get_option("--user"));
  auto* uninstall = service->add_subcommand(
      "uninstall", "remove gpuq.service (refused while it is enabled: disable it first)");
  common(uninstall);
  uninstall->add_flag("--force", o.force, "remove it even while it is enabled");
  uninstall->callback([&o] { o.uninstall = true; });
}

// `gpuq completion SHELL`, and `gpuq manpages --dir DIR`, hidden from help (for packaging).
void define_docs_commands(CLI::App& app, Parsed& p) {
  if (auto* completion = add_command(app, p, "completion",
                                     "print the completion script of bash, zsh or fish "
                                     "(docs/install.md says where each goes)")) {
    completion->add_option("shell", p.docs.shell, "bash, zsh or fish")->required()->type_name("SHELL");
  }
  if (!defines(p, "manpages")) return;
  auto* manpages = app.add_subcommand("manpages", "write the man pages gpuq.1 and gpuq-COMMAND.1");
  manpages->group("");
  manpages->add_option("--dir", p.docs.dir, "the directory to write them to")->required()->type_name("DIR");
}

void define_commands(CLI::App& app, Parsed& p) {
  define_global_options(app, p);

  if (auto* daemon = add_command(app, p, "daemon", "run the queue daemon for this machine")) {
    daemon->add_option("--gpus", p.daemon.gpus, "GPUs to use: auto, none, fake:N or 0,2,3")
        ->type_name("SPEC");
    daemon->add_flag("--detach", p.daemon.detach, "run in the background");
    daemon
        ->add_option("--fleet", p.daemon.fleet,
                     "join the fleet of this bucket: s3://BUCKET/PREFIX or dir:///PATH (default "
                     "$GPUQ_FLEET, else [fleet] url in config.toml; docs/fleet.md)")
        ->type_name("URL");
    daemon
        ->add_option("--node", p.daemon.node,
                     "this node's name in the fleet (default: the host name)")
        ->type_name("NAME");
    daemon
        ->add_option("--classes", p.daemon.classes, "fleet classes this node serves besides 'any'")
        ->type_name("A,B")
        ->delimiter(',');
    daemon
        ->add_option("--http", p.daemon.http,
                     "serve the API and the dashboard on this TCP address, or off (default "
                     "[http] listen in config.toml, else 127.0.0.1:7878; port 0: any free port)")
        ->type_name("ADDR:PORT");
    daemon->add_flag("--http-allow-submit", p.daemon.http_allow_submit,
                     "accept job and plan submits over TCP (they run commands as you)");
    daemon->add_flag("--system", p.daemon.system,
                     "serve the users of this box (as root): the socket /run/gpuq/gpuq.sock for "
                     "[users] group, each job run as its submitter (docs/lab.md)");
  }

  define_client_commands(app, p);

  if (auto* lint =
          add_command(app, p, "lint", "check job scripts and plans without queueing them")) {
    lint->add_option("file", p.lint.files, "scripts and PLAN.json files")->required();
    lint->add_flag("--json", p.lint.json, "print the diagnostics as a JSON array");
  }

  if (auto* simulate =
          add_command(app, p, "simulate", "predict how a plan or a trace would run (no daemon)")) {
    simulate->add_option("plan", p.simulate.plan, "PLAN.json");
    simulate->add_option("--trace", p.simulate.trace, "a trace of jobs (CSV)")->type_name("FILE");
    simulate
        ->add_option_function<int>(
            "--gpus", [&p](const int& n) { p.simulate.gpus = n; }, "GPUs of the machine")
        ->type_name("N")
        ->required();
    simulate
        ->add_option("--policy", p.simulate.policy,
                     "fifo, priority or backfill (default: config.toml's [scheduler] policy, "
                     "else backfill)")
        ->type_name("POLICY");
    simulate
        ->add_option("--config", p.simulate.config,
                     "read lanes and scheduler policy from this config.toml (default: the "
                     "home's config.toml, when there is one)")
        ->type_name("FILE");
    simulate->add_flag("--json", p.simulate.json, "print the result as JSON");
  }

  if (auto* events = add_command(app, p, "events", "print the daemon's event log")) {
    events->add_flag("--json", p.events.json, "one JSON object per line");
    events->add_flag("-f,--follow", p.events.follow, "keep printing new events");
    events->add_option("--after", p.events.after, "start after this sequence number")
        ->type_name("SEQ");
  }

  if (auto* gpus = add_command(app, p, "gpus", "show the GPUs the daemon uses")) {
    gpus->add_flag("--json", p.gpus.json, "print the daemon's answer as JSON");
  }

  if (auto* hooks = add_command(
          app, p, "hooks", "show each event hook's cursor, lag and last error (docs/hooks.md)")) {
    hooks->add_flag("--json", p.hooks.json, "print the daemon's answer as JSON");
  }

  if (auto* gc =
          add_command(app, p, "gc",
                      "remove finished jobs older than [retention] keep now, with their runs, "
                      "run directories and events, and say what went")) {
    gc->add_flag("--dry-run", p.gc.dry_run, "say what would be removed; remove nothing");
    gc->add_flag("--json", p.gc.json, "print the daemon's answer as JSON");
  }

  if (auto* report =
          add_command(app, p, "report",
                      "GPU usage over a window: GPU-hours and shares by user, name, "
                      "outcome or GPU; waits; hours idle, lost and free while jobs waited")) {
    report
        ->add_option("--since", p.report.since,
                     "the window's start: a duration back from now or "
                     "an RFC 3339 time")
        ->type_name("WHEN")
        ->default_str("7d");
    report->add_option("--until", p.report.until, "the window's end (default now)")
        ->type_name("WHEN");
    report->add_option("--by", p.report.by, "group by user, name, outcome or gpu")
        ->type_name("KEY")
        ->default_str("user");
    report->add_flag("--json", p.report.json, "print the daemon's answer as JSON");
    report->add_flag("--csv", p.report.csv,
                     "print the groups as CSV: a header row, one row per group");
  }

  if (auto* check =
          add_command(app, p, "check",
                      "exit 0 when the daemon answers, its heartbeat is fresh and nothing "
                      "needs a person; else one line per problem (for cron and monitoring)")) {
    check->add_flag("--json", p.check.json, "print {ok, problems, daemon} as JSON");
    check->add_option("--timeout", p.check.timeout, "the hard limit of the call to the daemon")
        ->type_name("DUR")
        ->default_str("10s");
    check
        ->add_option("--max-wait", p.check.max_wait,
                     "report a job waiting on a condition (REQUIRES, file) longer than this")
        ->type_name("DUR")
        ->default_str("1h");
    check
        ->add_option("--stale-after", p.check.stale_after,
                     "a heartbeat older than this is stale (default: 3 heartbeat intervals)")
        ->type_name("DUR");
  }

  if (auto* dashboard = add_command(
          app, p, "dashboard", "print the dashboard's link (it logs the browser in) and open it")) {
    dashboard->add_flag("--no-open", p.dashboard.no_open, "print the link only; open no browser");
    dashboard->add_flag("--json", p.dashboard.json, "print {\"url\", \"listen\"} as JSON");
    dashboard->add_flag("--revoke", p.dashboard.revoke,
                        "a box's daemon: revoke your dashboard token (its links and cookies stop working)");
  }

  define_service_command(app, p);
  if (defines(p, "fleet") || p.lists_all) define_fleet_command(app, p.fleet, defines(p, "fleet"));
  define_docs_commands(app, p);
}

// Where `gpuq --url` sends its requests, and with which token.
struct Remote {
  std::optional<DaemonUrl> url;  // nullopt: the home's socket
  std::string token;
  std::string token_withheld;  // why the home's token was not sent (for an answer 401)
};

// `gpuq --url URL [--token T]` (else $GPUQ_URL, $GPUQ_TOKEN; with a URL and no token, the
// home's token file when it can be read and the URL names the listener it was made for:
// cli/token_scope.h): the daemon to talk to over TCP.
Result<Remote> resolve_remote(const Parsed& p, const Io& io, const std::string& home) {
  std::string url = p.url.empty() ? env_value(io, "GPUQ_URL") : p.url;
  Remote remote;
  remote.token = p.token.empty() ? env_value(io, "GPUQ_TOKEN") : p.token;
  if (url.empty()) {
    if (!p.token.empty()) return fail(Code::kInvalidArgument, "--token goes with --url (or $GPUQ_URL)");
    return Remote{};
  }
  auto parsed = parse_daemon_url(url);
  if (!parsed) return tl::unexpected(parsed.error());
  remote.url = std::move(*parsed);
  if (remote.token.empty()) {
    HomeLayout layout{home};
    if (auto read = read_token_file(layout.token())) {
      std::string listen = read_token_listen(layout.token_listen());
      if (token_may_go_to(*remote.url, listen)) {
        remote.token = std::move(*read);
      } else {
        remote.token_withheld = token_withheld_reason(*remote.url, listen, layout);
      }
    }
  }
  return remote;
}

int dispatch(const std::string& command, Parsed& p, const Hooks& hooks, const Io& io) {
  auto home = resolve_home(p.home);
  if (!home) {
    *io.err << "gpuq: " << home.error().message << '\n';
    return kExitUsage;
  }
  if (command == "daemon") {
    if (auto st = check_gpu_selection(p.daemon.gpus); !st) {
      *io.err << "gpuq: " << st.error().message << '\n';
      return kExitUsage;
    }
    if (auto listen = p.daemon.http.empty() ? Result<std::optional<ListenAddress>>() : parse_listen_address(p.daemon.http);
        !listen) {
      *io.err << "gpuq: --http: " << listen.error().message << '\n';
      return kExitUsage;
    }
    if (!hooks.run_daemon) {
      *io.err << "gpuq: this build has no daemon\n";
      return kExitFailed;
    }
    // A system daemon keeps its state in /var/lib/gpuq unless --home says otherwise (a root
    // shell's GPUQ_HOME or XDG_STATE_HOME is not where the box's queue lives).
    p.daemon.home = p.daemon.system && p.home.empty() ? std::string(kSystemHome) : *home;
    return hooks.run_daemon(p.daemon);
  }
  Context ctx(io, *home, !p.home.empty());
  if (auto remote = resolve_remote(p, io, *home); !remote) {
    *io.err << "gpuq: " << remote.error().message << '\n';
    return kExitUsage;
  } else if (remote->url) {
    ctx.set_remote(std::move(*remote->url), std::move(remote->token), std::move(remote->token_withheld));
  }
  if (is_client_command(command)) return run_client_command(ctx, command, p);
  if (command == "lint") return run_lint(ctx, p.lint);
  if (command == "simulate") return run_simulate(ctx, p.simulate);
  if (command == "events") return run_events(ctx, p.events);
  if (command == "gpus") return run_gpus(ctx, p.gpus);
  if (command == "hooks") return run_hooks(ctx, p.hooks);
  if (command == "gc") return run_gc(ctx, p.gc);
  if (command == "report") return run_report(ctx, p.report);
  if (command == "check") return run_check(ctx, p.check);
  if (command == "dashboard") return run_dashboard(ctx, p.dashboard);
  if (command == "service") {
    p.service.home_given = !p.home.empty();
    return p.service.uninstall ? run_service_uninstall(ctx, p.service)
                               : run_service_install(ctx, p.service);
  }
  *io.err << "gpuq: unknown command " << command << '\n';
  return kExitUsage;
}

}  // namespace

int run_cli(const std::vector<std::string>& args, const Hooks& hooks, const Io& io) {
  CLI::App app(kAppDescription, "gpuq");
  Parsed parsed;
  parsed.only_command = command_word(args);
  parsed.lists_all = parsed.only_command.empty() || asks_for_help(args);
  if (parsed.only_command == "completion" || parsed.only_command == "manpages") {
    parsed.only_command.clear();  // they describe every command: all are defined
  }
  define_commands(app, parsed);
  if (!hooks.version.empty()) app.set_version_flag("--version", hooks.version, "print the version");
  if (args.empty()) {  // a bare `gpuq`: show what it can do
    *io.err << app.help();
    return kExitUsage;
  }
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11's order
    app.parse(reversed);
  } catch (const CLI::Success& e) {  // --help
    return app.exit(e, *io.out, *io.err);
  } catch (const CLI::ParseError& e) {
    std::string unknown = unknown_command(app, parsed.only_command);
    *io.err << "gpuq: "
            << (unknown.empty() ? std::string(e.what()) : "unknown command '" + unknown + "'")
            << "\nRun 'gpuq --help' for usage.\n";
    return kExitUsage;
  }
  CLI::App* command = app.get_subcommands().front();
  if (command->get_name() == "submit") {
    if (auto st = finish_submit(*command, parsed.submit); !st) {
      *io.err << "gpuq: " << st.error().message << "\nRun 'gpuq submit --help' for usage.\n";
      return kExitUsage;
    }
  }
  if (command->get_name() == "fleet") {
    // No daemon; the home only for the [fleet] table of its config.toml.
    parsed.fleet.home = parsed.home;
    return run_fleet(io, parsed.fleet);
  }
  if (command->get_name() == "completion") return run_completion(app, parsed.docs, hooks.release, io);
  if (command->get_name() == "manpages") {
    return run_manpages(app, parsed.docs, hooks.release, hooks.build_date, io);
  }
  return dispatch(command->get_name(), parsed, hooks, io);
}

}  // namespace gpuq::cli
