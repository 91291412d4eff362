// SPDX-License-Identifier: Apache-2.0
// The client commands of `gpuq`, one per cmd_*.cc file, each taking its parsed options.
// Argument parsing (CLI11) lives in app.cc and fills these structs; every command checks its
// own values before it contacts the daemon, so a usage error (exit 2) never sends anything.
// Commands print to the Context's streams and return the process exit status.
// Functions of one thread; they own nothing beyond the call.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/context.h"

namespace CLI {
class App;
}

namespace gpuq::cli {

struct SubmitOptions {
  std::string name;
  std::optional<int> gpus;       // unset: the script's header, else 0
  std::string priority;          // empty: the header's, else the daemon's default (normal)
  std::string cwd;               // empty: the current directory
  std::vector<std::string> env;  // KEY=VALUE overrides
  bool clean_env = false;        // send only a minimal environment (cli/submit_env.h)
  bool json = false;
  bool id_only = false;  // print only the job's id (a plan: each job's, one per line)
  std::vector<std::string> words;  // SCRIPT ARGS..., PLAN.json or, with command_mode, CMD ARGS...
  bool command_mode = false;       // the words came after `--`
  // Steps (docs/jobs.md, "Steps"): each --step TEXT, in order, instead of the words.
  std::vector<std::string> steps;
  // Containers (docs/jobs.md, "Containers"): unset means "not given" (a script's header applies).
  std::optional<std::string> image;
  std::optional<std::string> pull;            // missing | always | never
  std::optional<std::string> container_user;  // UID:GID

  // Scheduling (docs/api.md, "Scheduling"). Unset or empty means "not given": a script's
  // `#gpuq` header then applies; a list given here replaces the header's list.
  std::vector<std::string> after;        // afterok
  std::vector<std::string> after_any;
  std::vector<std::string> after_notok;
  std::vector<std::string> requires_commands;  // REQUIRES shell tests (`--requires`)
  std::vector<std::string> wait_files;
  std::vector<std::string> lanes;
  std::optional<std::string> done_if;
  std::optional<int> retries;
  std::optional<std::string> retry_delay;  // durations, checked with parse_duration
  std::optional<std::string> timeout;
  std::optional<std::string> est;
  std::optional<int64_t> gpu_mem;          // MiB
  bool share = false;
  std::optional<std::string> not_before;   // RFC 3339 or "+DUR" (from now)
  bool hold = false;
  std::optional<std::string> preempt;         // yield | restart | never
  std::optional<std::string> restart_within;  // a duration; only with preempt restart
  std::optional<std::string> requires_warn;   // watchers: durations; "0s" turns one off
  std::optional<std::string> quiet;
  std::optional<std::string> warn_after;
  bool replace = false;                    // plans only: replace changed pending jobs
  // Sweeps (docs/sweeps.md): an array's indexes, or a grid's parameters, and a cap.
  std::optional<std::string> array;        // "0-99:2%4", "1,4,9"
  std::vector<std::string> grid;           // "lr=1e-4,3e-4", "seed=0..4"
  std::optional<int> max_running;
};
// The submit request of docs/api.md, or a usage error (exit 2) saying what is wrong.
// `environ` holds "KEY=VALUE" strings; `cwd` is the absolute current directory; `now_ms` (the
// wall clock) resolves `--not-before +DUR`. A script's `#gpuq` header fields are applied
// first and the flags override them.
Outcome<Json> build_submit_request(const SubmitOptions& options,
                                   const std::vector<std::string>& environ, const std::string& cwd,
                                   int64_t now_ms);
// Whether the words name a plan (PLAN.json) rather than a script.
bool is_plan_submit(const SubmitOptions& options);
// Sends a plan request (POST /v1/plans), adding "replace" when asked, and prints one line per
// job ("created job 7 (train-a15)") or, with --json, the daemon's answer.
int send_plan(Context& ctx, Json request, const SubmitOptions& options);
int run_submit(Context& ctx, const SubmitOptions& options);

struct StatusOptions {
  bool json = false;
  bool all = false;  // every job: all finished ones, all pending ones (not the first kPendingShown)
  bool expand = false;  // each element of an unfinished array, not one line for the array
  std::string user;     // --user NAME: only that user's jobs
  bool mine = false;    // --mine: only the caller's own jobs
};
// The daemon's GET /v1/status lists as many finished jobs by default (api/handlers.cc).
constexpr size_t kFinishedShown = 10;
// How many pending jobs `gpuq status` lists without --all: the first to be served (the rest are
// counted), so that a queue of a million jobs costs the command what a short one does.
constexpr size_t kPendingShown = 100;
int run_status(Context& ctx, const StatusOptions& options);

struct ShowOptions {
  std::string ref;
  bool json = false;
};
int run_show(Context& ctx, const ShowOptions& options);

struct LogsOptions {
  std::string ref;
  bool follow = false;
  int run = 0;              // 0: the latest run (with `step`: the newest run that reached the step)
  std::optional<int> step;  // only this step's output (0-based, as `gpuq show` numbers them)
};
constexpr Millis kLogPollInterval{250};
int run_logs(Context& ctx, const LogsOptions& options);

struct WaitOptions {
  std::vector<std::string> refs;
  std::string timeout;  // a duration; empty: wait for ever
  bool json = false;    // print the waited jobs (final, or current on timeout) as one array
};
constexpr Millis kWaitPollMax{30'000};  // the longest single long-poll of the event log
int run_wait(Context& ctx, const WaitOptions& options);

// With --json, the commands that act on several jobs (cancel, hold, release, retry, wait)
// print one JSON array: the daemon's answer for each job, in the order given (docs/api.md,
// "The CLI's --json"). Exit statuses are the same as without it.
struct CancelOptions {
  std::vector<std::string> refs;
  bool json = false;
  bool failed = false;  // retry: of an array, only the failed elements (docs/sweeps.md)
  bool from_start = false;  // retry: a job with steps runs every step again (docs/jobs.md)
};
int run_cancel(Context& ctx, const CancelOptions& options);

// `hold`, `release` and `retry` take the same options as `cancel`: job ids or names.
using JobRefsOptions = CancelOptions;
int run_hold(Context& ctx, const JobRefsOptions& options);
// `release ID...` lets held jobs start; `release --attention GPU` returns a GPU in attention
// to service after a person has checked it.
struct ReleaseOptions {
  std::vector<std::string> refs;
  std::vector<std::string> attention;  // GPU names ("gpu1") or indices ("1")
  bool json = false;
};
int run_release(Context& ctx, const ReleaseOptions& options);
int run_retry(Context& ctx, const JobRefsOptions& options);

// One POST per item (a job or a GPU) for the commands that take several.
struct EachPost {
  std::string_view verb;                                    // "cannot <verb> <label>: ..."
  std::function<std::string(const std::string& ref)> target;  // the path to POST
  std::function<std::string(const std::string& ref)> label;   // "job 8", "gpu1"
  Json body = Json::object();
  std::function<std::string(const Json& answer)> line;  // what a success prints, without --json
  // For a ref the daemon has no job of (404): the path to POST instead, which acts on the
  // array of that name as one (its answer's "jobs" are each printed with `line`, and its
  // "refused" reported); unset, or a 404 there too: the job's 404 stands.
  std::function<std::string(const std::string& ref)> array_target = {};
  Json array_body = Json::object();
};
// POSTs for each ref in turn and prints a line for each success, or with `json` the array of
// answers (a refused ref's element is error_json's). A failure is reported on stderr and the
// rest still go. Exit 1 if any failed; 3 at once without a daemon (the array then holds the
// answers before it, and is left out when there are none).
int post_each(Context& ctx, const std::vector<std::string>& refs, bool json, const EachPost& post);
// POSTs /v1/jobs/{ref}/<action> for each job and prints "<done> job <id>" (post_each).
// A ref that names an array (docs/sweeps.md) is acted on as one, in one request
// (POST /v1/arrays/{ref}/<action> with `array_body`, and, without --json, "brief": true: the
// answer's ids are printed, a line each).
// `job_body` is what each job's POST sends (retry: {"from_start": true}).
int run_job_action(Context& ctx, const std::vector<std::string>& refs, bool json,
                   std::string_view action, std::string_view done, Json array_body = Json::object(),
                   Json job_body = Json::object());

struct MoveOptions {
  std::string ref;
  std::string before;    // exactly one of these five
  std::string after;
  bool top = false;
  bool bottom = false;
  std::string priority;  // high, normal, low or 0..1000
  bool json = false;     // print the moved job as the daemon answered it
};
// The body of POST /v1/jobs/{ref}/move, or a usage error unless exactly one position is given.
Outcome<Json> build_move_request(const MoveOptions& options);
int run_move(Context& ctx, const MoveOptions& options);

// `drain` (nothing new starts) when `drain`, else `undrain`; with `json` the daemon's
// {"draining": bool}.
int run_drain(Context& ctx, bool drain, bool json);

struct LintOptions {
  std::vector<std::string> files;
  bool json = false;
};
constexpr Millis kLintGpuQueryTimeout{2'000};  // a daemon that is slow to answer is not needed
int run_lint(Context& ctx, const LintOptions& options);

struct SimulateOptions {
  std::string plan;          // PLAN.json, or
  std::string trace;         // a trace CSV
  std::optional<int> gpus;   // required
  std::string policy;        // empty: config.toml's [scheduler] policy (default backfill)
  std::string config;        // --config FILE; empty: the home's config.toml when it exists
  bool json = false;
};
int run_simulate(Context& ctx, const SimulateOptions& options);

struct EventsOptions {
  bool json = false;
  bool follow = false;
  int64_t after = 0;
};
constexpr Millis kEventsFollowWait{30'000};
int run_events(Context& ctx, const EventsOptions& options);

// `gpuq check`: healthy (0), problems (1, one line each) or unreachable (3).
struct CheckOptions {
  bool json = false;
  std::string timeout = "10s";   // the hard limit of the call to the daemon
  std::string max_wait = "1h";   // a job waiting on a condition longer than this is a problem
  std::string stale_after;       // a heartbeat older than this is stale; empty: 3 intervals
};
int run_check(Context& ctx, const CheckOptions& options);

struct GpusOptions {
  bool json = false;
};
int run_gpus(Context& ctx, const GpusOptions& options);

// `gpuq hooks`: each event hook's cursor, lag and last error (GET /v1/hooks).
struct HooksOptions {
  bool json = false;
};
int run_hooks(Context& ctx, const HooksOptions& options);

// `gpuq gc`: prune now what `[retention] keep` allows (POST /v1/gc); --dry-run only tells.
struct GcOptions {
  bool dry_run = false;
  bool json = false;
};
// A first prune of a long history may delete many run directories before the daemon answers.
constexpr Millis kGcTimeout{600'000};
int run_gc(Context& ctx, const GcOptions& options);

// `gpuq report`: GPU usage, waits and waste over a window (GET /v1/report, docs/report.md).
struct ReportOptions {
  std::string since = "7d";  // a duration back from now, or an RFC 3339 time
  std::string until;         // the same; empty: now
  std::string by = "user";   // user, name, outcome or gpu
  bool json = false;
  bool csv = false;
};
// A report over a long window reads many samples.
constexpr Millis kReportTimeout{120'000};
// The request target, or a usage error (exit 2) for a bad --since, --until or --by.
Outcome<std::string> build_report_target(const ReportOptions& options);
// The text table and the CSV (a header row, one row per group) of a report answer.
std::string report_text(const Json& report, bool color);
std::string report_csv(const Json& report);
int run_report(Context& ctx, const ReportOptions& options);

// `gpuq service install|uninstall`: the daemon as a systemd unit (cli/service_unit.h). It writes
// or removes the unit file only, and prints the systemctl commands to run; it contacts no daemon.
struct ServiceOptions {
  bool uninstall = false;        // which of the two
  bool user = false;             // a user unit (systemctl --user), else a system unit
  std::string unit_dir;          // empty: the user or system unit directory
  bool print = false;            // install: print the unit, write nothing
  bool force = false;            // install: replace a different unit; uninstall: even if enabled
  std::string gpus;              // install: the daemon's --gpus; empty: its default
  std::string run_as;            // install, system unit: User=; empty: the invoking user
  std::vector<std::string> env;  // install: KEY=VALUE, Environment= of the daemon
  bool home_given = false;       // --home was given: the unit pins the state directory
  std::string executable;        // --executable; empty: this process's binary (/proc/self/exe)
};
int run_service_install(Context& ctx, const ServiceOptions& options);
int run_service_uninstall(Context& ctx, const ServiceOptions& options);

// `gpuq dashboard`: the dashboard's link, http://HOST:PORT/#token=T (the token travels in the
// fragment, which no browser sends to a server), from GET /v1/health's "http" and the home's
// token file; opened with xdg-open when a display is set. An error saying how to turn HTTP on
// when the daemon serves none.
struct DashboardOptions {
  bool no_open = false;
  bool json = false;  // {"url", "listen"}
  bool revoke = false;  // forget the caller's own token on a box's daemon (docs/lab.md)
};
int run_dashboard(Context& ctx, const DashboardOptions& options);

// `gpuq completion SHELL` prints the completion script of bash, zsh or fish; the hidden
// `gpuq manpages --dir DIR` (packaging) writes gpuq.1 and a gpuq-COMMAND.1 per command there,
// printing each file's path. Both describe `root`, the whole command tree (cli/cli_docs.h);
// `release` and `build_date` as in Hooks. They contact no daemon.
struct DocsOptions {
  std::string shell;  // completion
  std::string dir;    // manpages
};
int run_completion(const CLI::App& root, const DocsOptions& options, const std::string& release,
                   const Io& io);
int run_manpages(const CLI::App& root, const DocsOptions& options, const std::string& release,
                 const std::string& build_date, const Io& io);

}  // namespace gpuq::cli
