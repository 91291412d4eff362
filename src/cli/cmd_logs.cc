// `gpuq logs ID [-f] [--run N]`: copies a run's log to stdout. With -f it keeps reading from
// where it stopped every kLogPollInterval until the job is finished and its log fully read,
// moving on to the next run when the job is retried or requeued.
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

class LogReader {
 public:
  LogReader(Context& ctx, const LogsOptions& options) : ctx_(ctx), options_(options) {
    run_ = options.run;
  }

  int read() {
    for (;;) {
      auto chunk = fetch(run_, offset_);
      if (!chunk) return ctx_.report(chunk.error());
      if (run_ == 0) run_ = static_cast<int>(header_int(*chunk, "X-Gpuq-Run", 0));
      ctx_.out().write(chunk->body.data(), static_cast<std::streamsize>(chunk->body.size()));
      ctx_.out().flush();
      offset_ += static_cast<int64_t>(chunk->body.size());
      int64_t size = header_int(*chunk, "X-Gpuq-Log-Size", offset_);
      if (!chunk->body.empty() && offset_ < size) continue;  // more is there already
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

 private:
  Outcome<HttpResponse> fetch(int run, int64_t offset, int64_t limit = 0) {
    std::string target = fmt::format("{}/log?offset={}", job_path(options_.ref), offset);
    if (run > 0) target += fmt::format("&run={}", run);
    if (limit > 0) target += fmt::format("&limit={}", limit);
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
  int run_ = 0;  // the run being read; 0 until the job has one
  int64_t offset_ = 0;
};

}  // namespace

int run_logs(Context& ctx, const LogsOptions& options) {
  if (options.run < 0) return ctx.report(kExitUsage, "--run must be 1 or more");
  return LogReader(ctx, options).read();
}

}  // namespace gpuq::cli
