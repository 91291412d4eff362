// SPDX-License-Identifier: Apache-2.0
// `gpuq logs ID [-f] [--run N] [--step N]`: copies a run's log to stdout. With -f it keeps
// reading from where it stopped every kLogPollInterval until the job is finished and its log
// fully read, moving on to the next run when the job is retried or requeued. With --step, only
// that step's output (the daemon cuts it from output.log: GET /v1/jobs/{ref}/log?step=N), of the
// newest run that reached it; with -f, until the step has ended.
#include <fmt/format.h>

#include <charconv>

#include "cli/commands.h"
#include "model/job.h"

namespace gpuq::cli {
namespace {

int64_t header_int(const HttpResponse& response, std::string_view name, int64_t fallback) {
  std::string text = response.header(name);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return fallback;
  return value;
}

bool terminal_state(const std::string& text) {
  auto state = parse_job_state(text);
  return state && is_terminal(*state);
}

// A step state (model/step.h) after which the step's output grows no more.
bool step_over(const std::string& state) {
  return !state.empty() && state != "pending" && state != "running";
}

class LogReader {
 public:
  LogReader(Context& ctx, const LogsOptions& options) : ctx_(ctx), options_(options) {
    run_ = options.run;
  }

  int read() { return options_.step ? read_step(*options_.step) : read_runs(); }

 private:
  // Every run in turn (with -f), or the one asked for.
  int read_runs() {
    for (;;) {
      auto chunk = copy_available();
      if (!chunk) return ctx_.report(chunk.error());
      if (!options_.follow) return kExitOk;

      // Caught up with run_. A newer run means this one is complete: move on (or stop, when
      // --run pinned this one).
      auto latest = latest_run();
      if (!latest) return ctx_.report(latest.error());
      if (*latest > run_) {
        if (options_.run != 0) return kExitOk;
        if (run_ != 0) ctx_.err() << fmt::format("gpuq: --- run {} ---\n", run_ + 1);
        run_ += 1;  // every run in turn, even ones that came and went quickly
        offset_ = 0;
        continue;
      }
      if (terminal_state(chunk->header("X-Gpuq-Job-State"))) return kExitOk;
      ctx_.io().sleep(kLogPollInterval);
    }
  }

  // One step's output, in the run the daemon picks (the newest that reached it) unless --run
  // pinned one; with -f, until the step has ended, waiting for a run to reach it.
  int read_step(int step) {
    for (;;) {
      auto chunk = copy_available();
      if (!chunk) return ctx_.report(chunk.error());
      if (run_ != 0 && step_over(chunk->header("X-Gpuq-Step-State"))) return kExitOk;
      bool job_over = terminal_state(chunk->header("X-Gpuq-Job-State"));
      if (!options_.follow || job_over) {
        if (run_ == 0) ctx_.err() << not_reached_note(step, job_over);
        return kExitOk;
      }
      ctx_.io().sleep(kLogPollInterval);
    }
  }

  // Why a step printed nothing, and what to do.
  std::string not_reached_note(int step, bool job_over) const {
    if (job_over) {
      return fmt::format("gpuq: no run of job {} reached step {} (gpuq show {})\n", options_.ref,
                         step, options_.ref);
    }
    return fmt::format(
        "gpuq: job {} has not reached step {} yet; gpuq logs {} --step {} -f waits for it\n",
        options_.ref, step, options_.ref, step);
  }

  // Copies what the daemon has of run_'s log (or step) from offset_ on, taking run_ from the
  // first answer when none was chosen; returns the last answer.
  Outcome<HttpResponse> copy_available() {
    for (;;) {
      auto chunk = fetch(run_, offset_);
      if (!chunk) return chunk;
      if (run_ == 0) {
        run_ = static_cast<int>(header_int(*chunk, "X-Gpuq-Run", 0));
        if (run_ != 0 && offset_ > 0 && !options_.step) {
          // What came before was the image's pull (a container job's log before its first
          // run): the run's own log is read from its start.
          ctx_.err() << fmt::format("gpuq: --- run {} ---\n", run_);
          offset_ = 0;
          continue;
        }
      }
      ctx_.out().write(chunk->body.data(), static_cast<std::streamsize>(chunk->body.size()));
      ctx_.out().flush();
      offset_ += static_cast<int64_t>(chunk->body.size());
      int64_t size = header_int(*chunk, "X-Gpuq-Log-Size", offset_);
      if (chunk->body.empty() || offset_ >= size) return chunk;  // else more is there already
    }
  }

  Outcome<HttpResponse> fetch(int run, int64_t offset, int64_t limit = 0) {
    std::string target = fmt::format("{}/log?offset={}", job_path(options_.ref), offset);
    if (run > 0) target += fmt::format("&run={}", run);
    if (limit > 0) target += fmt::format("&limit={}", limit);
    if (options_.step) target += fmt::format("&step={}", *options_.step);
    return ctx_.client().get(target);
  }

  // The number of the job's latest run (0 before its first), from the log's headers.
  Outcome<int> latest_run() {
    auto probe = fetch(0, 0, 1);
    if (!probe) return tl::unexpected(probe.error());
    return static_cast<int>(header_int(*probe, "X-Gpuq-Run", 0));
  }

  Context& ctx_;
  const LogsOptions& options_;
  int run_ = 0;  // the run being read; 0 until the job has one (or, for a step, one reached it)
  int64_t offset_ = 0;
};

}  // namespace

int run_logs(Context& ctx, const LogsOptions& options) {
  if (options.run < 0) return ctx.report(kExitUsage, "--run must be 1 or more");
  if (options.step && *options.step < 0) {
    return ctx.report(
        kExitUsage,
        "--step must be 0 or more (steps are numbered from 0, as gpuq show lists them)");
  }
  return LogReader(ctx, options).read();
}

}  // namespace gpuq::cli
