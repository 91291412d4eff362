#include "cli/app.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <set>

#include "base/paths.h"
#include "cli/commands.h"

namespace gpuq::cli {
namespace {

// Every option the command line can hold; CLI11 writes into it.
struct Parsed {
  std::string home;
  DaemonFlags daemon;
  SubmitOptions submit;
  StatusOptions status;
  ShowOptions show;
  LogsOptions logs;
  WaitOptions wait;
  CancelOptions cancel;
  EventsOptions events;
  GpusOptions gpus;
};

CLI::App* add_command(CLI::App& app, Parsed& p, const std::string& name,
                      const std::string& description) {
  CLI::App* sub = app.add_subcommand(name, description);
  sub->add_option("--home", p.home, "the daemon's state directory")->type_name("DIR");
  return sub;
}

void define_commands(CLI::App& app, Parsed& p) {
  app.add_option("--home", p.home,
                 "the daemon's state directory (default $GPUQ_HOME, $XDG_STATE_HOME/gpuq or "
                 "~/.local/state/gpuq)")
      ->type_name("DIR");
  app.require_subcommand(1);

  auto* daemon = add_command(app, p, "daemon", "run the queue daemon for this machine");
  daemon->add_option("--gpus", p.daemon.gpus, "GPUs to use: auto, none, fake:N or 0,2,3")
      ->type_name("SPEC");
  daemon->add_flag("--detach", p.daemon.detach, "run in the background");

  auto* submit = add_command(app, p, "submit", "queue a script or a command");
  submit->add_option("--name", p.submit.name, "a unique name for the job");
  submit->add_option("--gpus", p.submit.gpus, "GPUs the job needs (default 0)")->type_name("N");
  submit->add_option("--priority", p.submit.priority, "high, normal, low or 0..1000 (lower first)")
      ->type_name("P");
  submit->add_option("--cwd", p.submit.cwd, "working directory (default: the current one)")
      ->type_name("DIR");
  submit->add_option("--env", p.submit.env, "set a variable for the job (repeatable)")
      ->type_name("K=V")
      ->allow_extra_args(false);
  submit->add_flag("--json", p.submit.json, "print the queued job as JSON");
  submit->add_option("script", p.submit.words, "SCRIPT [ARGS...] or -- CMD [ARGS...]");
  submit->positionals_at_end();  // everything after the script belongs to the script
  submit->allow_extras();        // `--` and unknown options are sorted out after parsing

  auto* status = add_command(app, p, "status", "show GPUs and jobs");
  status->add_flag("--json", p.status.json, "print the daemon's answer as JSON");
  status->add_flag("--all", p.status.all, "show every finished job");

  auto* show = add_command(app, p, "show", "show one job and its runs");
  show->add_option("job", p.show.ref, "job id or name")->required();
  show->add_flag("--json", p.show.json, "print the job as JSON");

  auto* logs = add_command(app, p, "logs", "print a job's log");
  logs->add_option("job", p.logs.ref, "job id or name")->required();
  logs->add_flag("-f,--follow", p.logs.follow, "keep printing until the job has finished");
  logs->add_option("--run", p.logs.run, "which run (default: the latest)")->type_name("N");

  auto* wait = add_command(app, p, "wait", "wait for jobs to finish (exit 0 if all succeeded)");
  wait->add_option("job", p.wait.refs, "job ids or names")->required();
  wait->add_option("--timeout", p.wait.timeout, "give up after this long (exit 124)")
      ->type_name("DUR");

  auto* cancel = add_command(app, p, "cancel", "cancel jobs");
  cancel->add_option("job", p.cancel.refs, "job ids or names")->required();

  auto* events = add_command(app, p, "events", "print the daemon's event log");
  events->add_flag("--json", p.events.json, "one JSON object per line");
  events->add_flag("-f,--follow", p.events.follow, "keep printing new events");
  events->add_option("--after", p.events.after, "start after this sequence number")
      ->type_name("SEQ");

  auto* gpus = add_command(app, p, "gpus", "show the GPUs the daemon uses");
  gpus->add_flag("--json", p.gpus.json, "print the daemon's answer as JSON");
}

// Sorts out what CLI11 left over from `submit`: a `--` before the words (a command, not a
// script), or an unknown option.
Status finish_submit(const CLI::App& submit, SubmitOptions& options) {
  for (const auto& extra : submit.remaining()) {
    if (extra == "--") {
      options.command_mode = true;
      continue;
    }
    if (extra.starts_with("-"))
      return fail(Code::kInvalidArgument, "submit: unknown option " + extra);
    return fail(Code::kInvalidArgument, "submit: unexpected argument " + extra);
  }
  return ok();
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
    if (!hooks.run_daemon) {
      *io.err << "gpuq: this build has no daemon\n";
      return kExitFailed;
    }
    p.daemon.home = *home;
    return hooks.run_daemon(p.daemon);
  }
  Context ctx(io, *home, !p.home.empty());
  if (command == "submit") return run_submit(ctx, p.submit);
  if (command == "status") return run_status(ctx, p.status);
  if (command == "show") return run_show(ctx, p.show);
  if (command == "logs") return run_logs(ctx, p.logs);
  if (command == "wait") return run_wait(ctx, p.wait);
  if (command == "cancel") return run_cancel(ctx, p.cancel);
  if (command == "events") return run_events(ctx, p.events);
  if (command == "gpus") return run_gpus(ctx, p.gpus);
  *io.err << "gpuq: unknown command " << command << '\n';
  return kExitUsage;
}

// The command word when it names no command (CLI11 would only say one is required).
std::string unknown_command(const CLI::App& app, const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--home") {
      ++i;
      continue;
    }
    if (args[i].starts_with("-")) continue;
    for (const CLI::App* sub : app.get_subcommands({})) {
      if (sub->get_name() == args[i]) return "";
    }
    return args[i];
  }
  return "";
}

}  // namespace

int run_cli(const std::vector<std::string>& args, const Hooks& hooks, const Io& io) {
  CLI::App app("gpuq: a GPU job queue. Every command talks to the daemon of --home.", "gpuq");
  Parsed parsed;
  define_commands(app, parsed);
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
    std::string unknown = unknown_command(app, args);
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
  return dispatch(command->get_name(), parsed, hooks, io);
}

Status check_gpu_selection(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return fail(Code::kInvalidArgument,
                fmt::format("bad --gpus '{}': {}; use auto, none, fake:N or device indices like "
                            "0,2,3",
                            text, why));
  };
  auto number = [](std::string_view word) -> std::optional<int> {
    int value = 0;
    auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
    if (word.empty() || ec != std::errc() || end != word.data() + word.size()) return std::nullopt;
    return value;
  };
  if (text == "auto" || text == "none") return ok();
  if (text.starts_with("fake:")) {
    auto n = number(text.substr(5));
    if (!n || *n < 1 || *n > 1024) return bad("fake:N needs a count from 1 to 1024");
    return ok();
  }
  std::set<int> seen;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string_view word =
        text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    auto index = number(word);
    if (!index || *index < 0) return bad(fmt::format("'{}' is not a device index", word));
    if (!seen.insert(*index).second) return bad(fmt::format("device {} is named twice", *index));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return ok();
}

}  // namespace gpuq::cli
