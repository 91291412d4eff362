// SPDX-License-Identifier: Apache-2.0
#include "cli/submit_flags.h"

#include <CLI/CLI.hpp>

namespace gpuq::cli {
namespace {

// A repeatable flag: each occurrence takes one value.
void list_flag(CLI::App* submit, const char* flag, std::vector<std::string>& into, const char* what,
               const char* type) {
  submit->add_option(flag, into, what)->type_name(type)->allow_extra_args(false);
}

// A flag with one value, recorded only when given.
void text_flag(CLI::App* submit, const char* flag, std::optional<std::string>& into,
               const char* what, const char* type) {
  submit
      ->add_option_function<std::string>(
          flag, [&into](const std::string& v) { into = v; }, what)
      ->type_name(type);
}

// --step and the container flags: what runs, and in what.
void define_step_and_container_flags(CLI::App* submit, SubmitOptions& o) {
  list_flag(submit, "--step", o.steps,
            "a step of the job, in order (repeatable): a script and its arguments, or a command, "
            "split into words as a shell quotes them (instead of SCRIPT or -- CMD)",
            "TEXT");
  text_flag(submit, "--image", o.image, "run the job in a container of this image", "IMAGE");
  text_flag(submit, "--pull", o.pull,
            "with --image: pull it when missing (the default), always, or never", "POLICY");
  text_flag(submit, "--container-user", o.container_user,
            "with --image: the user inside (default: yours)", "UID:GID");
}

// The scheduling flags of `submit` (docs/api.md, "Scheduling"): each maps to the submit
// request's field of the same name, with `_` for `-`. Lists are repeatable; a value is only
// recorded when given, so a script's header applies otherwise.
void define_scheduling_flags(CLI::App* submit, SubmitOptions& o) {
  auto list = [submit](const char* flag, std::vector<std::string>& into, const char* what,
                       const char* type) { list_flag(submit, flag, into, what, type); };
  auto text = [submit](const char* flag, std::optional<std::string>& into, const char* what,
                       const char* type) { text_flag(submit, flag, into, what, type); };
  list("--after", o.after, "start after this job succeeded (repeatable)", "ID|NAME");
  list("--after-any", o.after_any, "start after this job finished, any outcome (repeatable)",
       "ID|NAME");
  list("--after-notok", o.after_notok, "start after this job failed or was cancelled (repeatable)",
       "ID|NAME");
  list("--requires", o.requires_commands, "a shell test that must exit 0 first (repeatable)",
       "SHELL");
  text("--done-if", o.done_if, "a shell test: true before a start skips the job", "SHELL");
  list("--wait-file", o.wait_files, "start once this path exists (repeatable)", "PATH");
  list("--lane", o.lanes, "hold one unit of this lane while running (repeatable)", "NAME");
  submit
      ->add_option_function<int>(
          "--retries", [&o](const int& n) { o.retries = n; }, "reruns after a failed run")
      ->type_name("N");
  text("--retry-delay", o.retry_delay, "first delay before a retry (doubles each time)", "DUR");
  text("--timeout", o.timeout, "stop a run after this long (outcome timed-out)", "DUR");
  text("--est", o.est, "expected run time, for backfill and ETAs", "DUR");
  submit
      ->add_option_function<int64_t>(
          "--gpu-mem", [&o](const int64_t& n) { o.gpu_mem = n; }, "free memory needed on each GPU")
      ->type_name("MiB");
  submit->add_flag("--share", o.share, "may share a GPU with other sharing jobs (needs --gpu-mem)");
  text("--not-before", o.not_before, "do not start before this time (RFC 3339, or +2h from now)",
       "TIME");
  submit->add_flag("--hold", o.hold, "queue it held: it starts after gpuq release");
  text("--preempt", o.preempt,
       "when a better job needs its GPUs: yield (save state, exit 75, resume later), restart "
       "(stopped and rerun) or never (the default)",
       "MODE");
  text("--restart-within", o.restart_within,
       "with --preempt restart: only while the run is younger than this", "DUR");
  text("--requires-warn", o.requires_warn,
       "event job.requires_wait when a condition stays false this long (default [watch] "
       "requires_warn, 1h; 0s: never)",
       "DUR");
  text("--quiet", o.quiet, "event job.quiet when the running job's log is silent this long", "DUR");
  text("--warn-after", o.warn_after,
       "event job.overdue when a run lasts longer than this (default: --est × [watch] "
       "overdue_factor)",
       "DUR");
  submit->add_flag("--replace", o.replace, "with a plan: replace pending jobs whose spec changed");
  submit
      ->add_option("--array", o.array,
                   "queue an array: elements NAME[i] for indexes 0-99, 0-99:STEP, 1,4,9; %MAX "
                   "caps how many run at once; {i} in arguments is the index (docs/sweeps.md)")
      ->type_name("INDEXES");
  list("--grid", o.grid,
       "queue a grid: one parameter NAME=V1,V2 or NAME=A..B (repeatable; the elements are the "
       "product); {NAME} in arguments is its value",
       "NAME=VALUES");
  submit
      ->add_option("--max-running", o.max_running,
                   "with --array or --grid: at most N elements run at once")
      ->type_name("N");
}

}  // namespace

void define_submit_job_flags(CLI::App* submit, SubmitOptions& options) {
  define_step_and_container_flags(submit, options);
  define_scheduling_flags(submit, options);
}

}  // namespace gpuq::cli
