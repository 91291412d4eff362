// SPDX-License-Identifier: Apache-2.0
// `gpuq wait ID... [--timeout DUR] [--json]`: blocks until every named job (every element of a
// named array) has finished, woken
// by the daemon's event log (long-polls), never by polling job states on a timer.
// Order matters so that no change is missed: read the event log's last seq first, then the
// jobs' states, then long-poll for events after that seq and re-read the jobs they name.
// An array's elements are read from its one summary (GET /v1/arrays/{ref}: id, name, state),
// not one request each; an element is read in full only when an event names it, when it ends
// other than succeeded (its reason is printed), or for --json (which prints whole jobs).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "cli/commands.h"
#include "cli/format.h"

namespace gpuq::cli {
namespace {

struct WaitedJob {
  std::string ref;
  Json job;
  bool summary = false;  // an array's line for it (id, name, state, ...), not the whole job
  std::string state() const { return json_string(job, "state"); }
  // Finished for `wait`: terminal, or blocked (it cannot run until a person acts).
  bool done() const {
    std::string s = state();
    return s == "succeeded" || s == "failed" || s == "cancelled" || s == "skipped" ||
           s == "blocked";
  }
  bool succeeded() const { return state() == "succeeded" || state() == "skipped"; }
};

class Waiter {
 public:
  Waiter(Context& ctx, std::optional<Millis> timeout, bool json)
      : ctx_(ctx), timeout_(timeout), json_(json) {
    if (timeout) deadline_ = ctx.io().steady_ms() + timeout->count();
  }

  int wait(const std::vector<std::string>& refs) {
    if (auto seq = current_seq(); !seq) {
      return ctx_.report(seq.error());
    } else {
      cursor_ = *seq;
    }
    for (const auto& ref : refs) {
      auto job = ctx_.client().get_json(job_path(ref));
      if (!job && job.error().code == "not_found") {
        // An array or grid (docs/sweeps.md): every element.
        auto array = ctx_.client().get_json("/v1/arrays/" + percent_encode(ref));
        if (array) {
          for (const auto& element : json_array(*array, "jobs")) {
            std::string id = std::to_string(json_int(element, "id").value_or(0));
            jobs_.push_back({id, element, /*summary=*/true});
          }
          continue;
        }
      }
      if (!job) return report_job_error(ref, job.error());
      jobs_.push_back({ref, std::move(*job)});
    }
    for (;;) {
      auto all_done = [&] { return std::all_of(jobs_.begin(), jobs_.end(), [](const WaitedJob& j) { return j.done(); }); };
      if (all_done()) {
        // The elements known by their summary are read whole now; one retried meanwhile is not
        // done any more, and the wait goes on (its events are after the cursor).
        if (int status = read_summaries(); status != kExitOk) return status;
        if (all_done()) return finish();
      }
      int64_t wait_ms = kWaitPollMax.count();
      if (timeout_) {
        int64_t left = deadline_ - ctx_.io().steady_ms();
        if (left <= 0) return timed_out();
        wait_ms = std::min(wait_ms, left);
      }
      auto changed = next_events(wait_ms);
      if (!changed) return ctx_.report(changed.error());
      for (auto& waited : jobs_) {
        if (waited.done() || !changed->contains(json_int(waited.job, "id").value_or(-1))) continue;
        if (int status = read_whole(waited); status != kExitOk) return status;
      }
    }
  }

 private:
  static constexpr int64_t kEveryJob = -1;  // an event that may concern any job

  // The event log's last seq before anything is read, so later events are all seen.
  Outcome<int64_t> current_seq() {
    auto answer = ctx_.client().get_json("/v1/events?after=0&limit=0");
    if (!answer && answer.error().exit_code == kExitFailed) {
      answer =
          ctx_.client().get_json("/v1/events?after=0&limit=1");  // a daemon that wants limit > 0
    }
    if (!answer) return tl::unexpected(answer.error());
    return json_int(*answer, "last_seq").value_or(0);
  }

  // Long-polls the event log; returns the ids of jobs that events named (kEveryJob for events
  // about the daemon itself, after which every job is read again).
  Outcome<std::set<int64_t>> next_events(int64_t wait_ms) {
    std::string target = fmt::format("/v1/events?after={}&wait_ms={}", cursor_, wait_ms);
    auto answer = ctx_.client().get_json(target, Millis(wait_ms) + kLongPollSlack);
    if (!answer) return tl::unexpected(answer.error());
    std::set<int64_t> changed;
    const Json& events = json_array(*answer, "events");
    int64_t before = cursor_;
    for (const auto& event : events) {
      cursor_ = std::max(cursor_, json_int(event, "seq").value_or(cursor_));
      if (auto job = json_int(event, "job")) {
        changed.insert(*job);
      } else if (json_string(event, "kind").starts_with("daemon.")) {
        changed.insert(kEveryJob);
      }
    }
    if (!events.empty() && cursor_ == before) {
      return cli_fail(kExitFailed, fmt::format("the daemon's events do not advance (no seq "
                                               "after {})",
                                               before));
    }
    if (changed.contains(kEveryJob)) {
      for (const auto& waited : jobs_) changed.insert(json_int(waited.job, "id").value_or(-1));
    }
    return changed;
  }

  // Reads the job afresh, whole; a non-zero exit status when that failed (reported). An element
  // pruned since its array's summary keeps that summary (it has its final state).
  int read_whole(WaitedJob& waited) {
    auto job = ctx_.client().get_json(job_path(waited.ref));
    if (!job && waited.summary && job.error().code == "not_found") {
      waited.summary = false;  // as whole as it gets
      return kExitOk;
    }
    if (!job) return report_job_error(waited.ref, job.error());
    waited.job = std::move(*job);
    waited.summary = false;
    return kExitOk;
  }

  // The elements still known by their array's summary, read whole: each of them with --json,
  // else those that did not succeed (their reason is printed). A timeout's message needs only
  // their states, which the summary has.
  int read_summaries() {
    for (auto& waited : jobs_) {
      if (!waited.summary || (!json_ && waited.succeeded())) continue;
      if (int status = read_whole(waited); status != kExitOk) return status;
    }
    return kExitOk;
  }

  int report_job_error(const std::string& ref, const CliError& error) {
    if (error.exit_code == kExitNoDaemon) return ctx_.report(error);
    return ctx_.report(error.exit_code, fmt::format("job {}: {}", ref, error.message));
  }

  // With --json, the jobs as last read, in the order given: final states, or on timeout the
  // states they had then.
  void print_jobs() {
    if (!json_) return;
    Json jobs = Json::array();
    for (const auto& waited : jobs_) jobs.push_back(waited.job);
    print_json(ctx_, jobs);
  }

  int finish() {
    print_jobs();
    int status = kExitOk;
    for (const auto& waited : jobs_) {
      if (waited.succeeded()) continue;
      std::string reason = json_string(waited.job, "reason");
      ctx_.report(kExitFailed, fmt::format("{} {}{}", job_label(waited.job), waited.state(),
                                           reason.empty() ? "" : ": " + reason));
      status = kExitFailed;
    }
    return status;
  }

  int timed_out() {
    if (json_) {
      if (int status = read_summaries(); status != kExitOk) return status;
    }
    print_jobs();
    std::string unfinished;
    for (const auto& waited : jobs_) {
      if (waited.done()) continue;
      if (!unfinished.empty()) unfinished += ", ";
      unfinished += fmt::format("{} {}", job_label(waited.job), waited.state());
    }
    return ctx_.report(kExitTimeout, fmt::format("timed out after {}; still unfinished: {}",
                                                 format_duration(*timeout_), unfinished));
  }

  Context& ctx_;
  std::optional<Millis> timeout_;
  bool json_;
  int64_t deadline_ = 0;
  int64_t cursor_ = 0;
  std::vector<WaitedJob> jobs_;
};

}  // namespace

int run_wait(Context& ctx, const WaitOptions& options) {
  std::optional<Millis> timeout;
  if (!options.timeout.empty()) {
    auto parsed = parse_duration(options.timeout);
    if (!parsed) return ctx.report(kExitUsage, "--timeout: " + parsed.error().message);
    timeout = *parsed;
  }
  if (options.refs.empty()) return ctx.report(kExitUsage, "wait: name at least one job");
  return Waiter(ctx, timeout, options.json).wait(options.refs);
}

}  // namespace gpuq::cli
