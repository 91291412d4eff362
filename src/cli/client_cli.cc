// SPDX-License-Identifier: Apache-2.0
#include "cli/client_cli.h"

#include <CLI/CLI.hpp>
#include <array>
#include <algorithm>

#include "cli/submit_flags.h"

namespace gpuq::cli {

bool defines(const ClientOptions& options, const std::string& name) {
  return options.only_command.empty() || options.only_command == name;
}

CLI::App* add_command(CLI::App& app, ClientOptions& options, const std::string& name,
                      const std::string& description) {
  if (!defines(options, name) && !options.lists_all) return nullptr;
  CLI::App* sub = app.add_subcommand(name, description);
  if (!defines(options, name)) return nullptr;
  sub->add_option("--home", options.home, "the daemon's state directory")->type_name("DIR");
  return sub;
}

void define_global_options(CLI::App& app, ClientOptions& p) {
  app.add_option("--home", p.home,
                 "the daemon's state directory (default $GPUQ_HOME, $XDG_STATE_HOME/gpuq or "
                 "~/.local/state/gpuq)")
      ->type_name("DIR");
  app.add_option("--url", p.url,
                 "talk to the daemon's HTTP listener at http://HOST:PORT instead of the home's "
                 "socket (default $GPUQ_URL)")
      ->type_name("URL");
  app.add_option("--token", p.token,
                 "the token for --url (default $GPUQ_TOKEN, else the home's token file, sent only "
                 "to the listener it was made for). A value here is visible to every user in "
                 "`ps`: prefer $GPUQ_TOKEN")
      ->type_name("TOKEN");
  app.require_subcommand(1);
}

void define_client_commands(CLI::App& app, ClientOptions& p) {
  if (auto* submit =
          add_command(app, p, "submit", "queue a script, a command, a plan (PLAN.json) or a directory's job files")) {
    submit->add_option("--name", p.submit.name, "a unique name for the job");
    submit
        ->add_option_function<int>(
            "--gpus", [&p](const int& n) { p.submit.gpus = n; }, "GPUs the job needs (default 0)")
        ->type_name("N");
    submit
        ->add_option("--priority", p.submit.priority, "high, normal, low or 0..1000 (lower first)")
        ->type_name("P");
    submit->add_option("--cwd", p.submit.cwd, "working directory (default: the current one)")
        ->type_name("DIR");
    submit->add_option("--env", p.submit.env, "set a variable for the job (repeatable)")
        ->type_name("K=V")
        ->allow_extra_args(false);
    submit->add_flag("--clean-env", p.submit.clean_env,
                     "send only PATH, HOME, USER, LOGNAME, SHELL, LANG, LANGUAGE, LC_*, TZ, TMPDIR "
                     "and --env, not the whole environment (which the daemon stores with the job)");
    auto* json = submit->add_flag("--json", p.submit.json, "print the queued job as JSON");
    submit->add_flag("--id-only", p.submit.id_only,
                     "print only the job's id, for scripts: id=$(gpuq submit --id-only ...)")
        ->excludes(json);
    define_submit_job_flags(submit, p.submit);
    submit->add_option("script", p.submit.words,
                       "SCRIPT [ARGS...], -- CMD [ARGS...], PLAN.json [--replace] or DIR (its *.sh files)");
    submit->positionals_at_end();  // everything after the script belongs to the script
    submit->allow_extras();        // `--` and unknown options are sorted out after parsing
  }

  if (auto* status = add_command(app, p, "status", "show GPUs and jobs")) {
    status->add_flag("--json", p.status.json, "print the daemon's answer as JSON");
    status->add_flag("--all", p.status.all,
                      "show every job: every finished one, and every pending, held or blocked one past the first 100");
    status->add_flag("--expand", p.status.expand,
                     "list each element of an unfinished array (default: one line per array)");
    auto* user = status->add_option("--user", p.status.user, "list only the jobs of this user (login name)");
    status->add_flag("--mine", p.status.mine, "list only your own jobs")->excludes(user);
  }

  if (auto* show = add_command(app, p, "show", "show one job, its steps and its runs")) {
    show->add_option("job", p.show.ref, "job id or name")->required();
    show->add_flag("--json", p.show.json, "print the job as JSON");
  }

  if (auto* logs = add_command(app, p, "logs", "print a job's log")) {
    logs->add_option("job", p.logs.ref, "job id or name")->required();
    logs->add_flag("-f,--follow", p.logs.follow, "keep printing until the job has finished");
    logs->add_option("--run", p.logs.run, "which run (default: the latest)")->type_name("N");
    logs->add_option("--step", p.logs.step,
                     "only this step's output (0-based, as gpuq show numbers them), from the "
                     "newest run that reached it; with -f, until the step ends")
        ->type_name("N");
  }

  if (auto* wait =
          add_command(app, p, "wait", "wait for jobs to finish (exit 0 if all succeeded)")) {
    wait->add_option("job", p.wait.refs, "job ids or names")->required();
    wait->add_option("--timeout", p.wait.timeout, "give up after this long (exit 124)")
        ->type_name("DUR");
    wait->add_flag("--json", p.wait.json,
                   "print the jobs as the daemon last answered them (their current states on "
                   "timeout), as one JSON array");
  }

  if (auto* cancel = add_command(app, p, "cancel", "cancel jobs")) {
    cancel->add_option("job", p.cancel.refs, "job ids or names")->required();
    cancel->add_flag("--json", p.cancel.json, kJsonEach);
  }

  if (auto* hold = add_command(app, p, "hold", "keep pending jobs from starting")) {
    hold->add_option("job", p.hold.refs, "job ids or names")->required();
    hold->add_flag("--json", p.hold.json, kJsonEach);
  }
  if (auto* release = add_command(app, p, "release",
                                  "let held jobs start, or return a GPU in attention to service")) {
    // Jobs or GPUs, exactly one of the two; a group, so that --home and --json do not count.
    auto* release_what = release->add_option_group("what to release");
    auto* release_jobs = release_what->add_option("job", p.release.refs, "job ids or names");
    auto* release_gpu = release_what->add_option(
        "--attention", p.release.attention,
        "GPU (gpu1 or 1) whose cleanup could not be confirmed: release it after checking that "
        "nothing is left on it");
    release_jobs->excludes(release_gpu);
    release_what->require_option(1);
    release->add_flag("--json", p.release.json, kJsonEach);
  }
  if (auto* retry = add_command(app, p, "retry", "queue failed, cancelled or blocked jobs (or an array's elements) again")) {
    retry->add_option("job", p.retry.refs, "job ids or names")->required();
    retry->add_flag("--json", p.retry.json, kJsonEach);
    retry->add_flag("--failed", p.retry.failed,
                    "of an array: only its failed elements (not the cancelled or blocked ones)");
    retry->add_flag("--from-start", p.retry.from_start,
                    "a job with steps (or each retried element of an array): run every step again "
                    "(default: resume at the step that did not finish)");
  }

  if (auto* move = add_command(app, p, "move", "move a pending job in the queue")) {
    move->add_option("job", p.move.ref, "job id or name")->required();
    move->add_option("--before", p.move.before, "just before this job")->type_name("ID");
    move->add_option("--after", p.move.after, "just after this job")->type_name("ID");
    move->add_flag("--top", p.move.top, "first in the queue");
    move->add_flag("--bottom", p.move.bottom, "last in the queue");
    move->add_option("--priority", p.move.priority, "a new priority: high, normal, low or 0..1000")
        ->type_name("P");
    move->add_flag("--json", p.move.json, "print the moved job as JSON");
  }

  if (auto* drain = add_command(app, p, "drain", "start nothing new; running jobs finish")) {
    drain->add_flag("--json", p.drain_json, "print the daemon's answer as JSON");
  }
  if (auto* undrain = add_command(app, p, "undrain", "start jobs again after a drain")) {
    undrain->add_flag("--json", p.drain_json, "print the daemon's answer as JSON");
  }
}

bool is_client_command(std::string_view name) {
  static constexpr std::array<std::string_view, 12> kNames = {
      "submit", "status", "show", "logs", "wait", "cancel", "hold", "release", "retry", "move",
      "drain", "undrain"};
  return std::find(kNames.begin(), kNames.end(), name) != kNames.end();
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

int run_client_command(Context& ctx, const std::string& name, const ClientOptions& p) {
  if (name == "submit") return run_submit(ctx, p.submit);
  if (name == "status") return run_status(ctx, p.status);
  if (name == "show") return run_show(ctx, p.show);
  if (name == "logs") return run_logs(ctx, p.logs);
  if (name == "wait") return run_wait(ctx, p.wait);
  if (name == "cancel") return run_cancel(ctx, p.cancel);
  if (name == "hold") return run_hold(ctx, p.hold);
  if (name == "release") return run_release(ctx, p.release);
  if (name == "retry") return run_retry(ctx, p.retry);
  if (name == "move") return run_move(ctx, p.move);
  if (name == "drain" || name == "undrain") return run_drain(ctx, name == "drain", p.drain_json);
  return ctx.report(kExitUsage, "unknown command " + name);
}

}  // namespace gpuq::cli
