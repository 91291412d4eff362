// SPDX-License-Identifier: Apache-2.0
// Event hooks (docs/hooks.md): each `[[hook]]` of config.toml gets the events whose kind matches
// its globs, one at a time, in seq order, at least once, across daemon restarts.
//
// The HookRunner owns one thread per hook. A hook's thread reads the event log through its own
// read-only Store connection, starting after the hook's cursor (the last event handled), skips
// events that do not match (they only move the cursor), and delivers each matching event with
// hook_delivery.h. After a success the cursor moves on and is committed; after a failure the
// error is recorded and the same event is retried after a backoff (retry_min doubling up to
// retry_max): an event is never skipped, so a dead receiver holds back only its own hook.
//
// The queue actor stays the store's only writer: cursors and errors are written by handlers
// posted to the actor's io_context (cheap single-row upserts), never by hook threads, and a
// delivery never runs on the actor's thread, so a slow or hung receiver cannot block the queue.
// New events wake the threads through notify(), which the queue's event listener calls after
// each commit; a slow poll covers anything missed.
//
// A cursor is committed after the delivery it covers, and before the next delivery starts, so
// a crash between the two delivers that one event again: receivers see every event at least
// once, in seq order; a repeat is always of the event just before it.
//
// Thread rules: load() and commit_after_stop() run on the actor's thread while the actor does
// nothing else (before the queue starts, after its io_context has stopped); start() and stop()
// on the thread that owns the runner; notify() and statuses() are thread-safe. The actor's
// io_context and Store must outlive the runner's threads (stop() joins them).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/asio.h"
#include "base/duration.h"
#include "base/status.h"
#include "daemon/config.h"
#include "model/event.h"
#include "store/store.h"

namespace gpuq::daemon {

// Whether `kind` matches one of the fnmatch(3) globs ("job.*", "*", "queue.idle_with_work").
bool hook_matches(const std::vector<std::string>& globs, std::string_view kind);

// The wait before retry number `failures` (1 after the first failure): retry_min, doubled
// after each further failure, at most retry_max.
int64_t hook_retry_delay_ms(const HookConfig& hook, int failures);

// What `gpuq hooks` and GET /v1/hooks show of a hook's target, which may hold a secret (a
// webhook's path, a token in its query or userinfo, a bearer token on a command line): a URL's
// scheme, host and port, with "/…" for a path or query it has; a command's first word, with " …"
// for the rest.
std::string redacted_hook_target(const HookConfig& hook);

// Where one hook stands, for `gpuq hooks`, GET /v1/hooks and /metrics.
struct HookStatus {
  std::string name;
  std::string type;    // "command" | "url"
  std::string target;  // the command or the URL, redacted (redacted_hook_target)
  std::vector<std::string> events;
  int64_t cursor = 0;            // the last event handled (delivered, or not matching)
  int64_t last_seq = 0;          // the newest event the runner knows of
  int64_t lag = 0;               // last_seq - cursor: events not yet handled
  int64_t delivered = 0;         // events delivered, over the hook's whole life
  int failures = 0;              // failed attempts at the current event (0: not failing)
  std::string last_error;        // the latest failure, kept after later successes
  int64_t last_error_at_ms = 0;  // 0: never failed
  int64_t failing_since_ms = 0;  // 0 unless the current event has failed
  int64_t retry_at_ms = 0;       // 0 unless waiting to retry
};

// {"name","type","target","events","cursor","last_seq","lag","delivered","failures",
//  "last_error","last_error_at","failing_since","retry_at"} as in docs/api.md; times are
// RFC 3339 text or null.
nlohmann::json hook_status_to_json(const HookStatus& status);

struct HookRunnerOptions {
  std::string database;         // the store's file; each hook thread opens it read-only
  Millis poll_interval{2'000};  // the fallback wake-up when no notify() comes
  Millis stop_grace{2'000};     // how long stop() lets a running delivery finish
  int batch = 100;              // events read from the log at a time
};

class HookRunner {
 public:
  HookRunner(std::vector<HookConfig> hooks, boost::asio::io_context& actor_ioc,
             store::Store& actor_store, HookRunnerOptions options);
  ~HookRunner();
  HookRunner(const HookRunner&) = delete;
  HookRunner& operator=(const HookRunner&) = delete;

  // Reads the stored cursors. A hook seen for the first time starts at the end of the log, so
  // adding a hook does not replay the daemon's history to it; its cursor is stored at once so
  // that a crash before its first delivery cannot skip later events. Call before the queue
  // starts, so that the events of this start are the new hook's first.
  Status load();
  // Starts one thread per hook.
  void start();
  // Wakes the hook threads: events up to `last_seq` are committed. Thread-safe and quick (it
  // is called on the actor's thread after every commit).
  void notify(int64_t last_seq);
  // Stops the threads: backoff waits end at once; a running delivery gets stop_grace, then a
  // command's process group is killed and a POST aborted. Joins. Idempotent.
  void stop();
  // Writes the cursors reached since the last posted commit straight to the actor's store,
  // after stop(), once the actor's io_context has stopped (posted commits would never run).
  Status commit_after_stop();

  std::vector<HookStatus> statuses() const;
  bool empty() const { return hooks_.empty(); }

 private:
  // One hook: its settings, and where it stands (guarded by mutex_ unless noted).
  struct Hook {
    HookConfig config;
    int64_t cursor = 0;
    int64_t delivered = 0;
    int64_t committed = 0;     // the cursor last written to the store
    int64_t acknowledged = 0;  // the cursor of the last commit the actor ran (even if it failed)
    bool commit_posted = false;
    int failures = 0;
    std::string last_error;
    int64_t last_error_at_ms = 0;
    int64_t failing_since_ms = 0;
    int64_t retry_at_ms = 0;
    std::thread thread;  // owned by start()/stop()
  };

  void run(Hook& hook);
  // Delivers one matching event until it succeeds; false when stopping first.
  bool deliver_until_done(Hook& hook, const Event& event);
  Status attempt(const Hook& hook, const Event& event);
  void advance(Hook& hook, int64_t seq, bool delivered);
  void post_commit(Hook& hook);
  // Records a failure and waits out its backoff; false when stopping first.
  bool fail_and_wait(Hook& hook, const std::string& error);
  // Waits until an event after `known` is announced, the poll interval passes, or stopping.
  void wait_for_events(int64_t known);

  std::vector<std::unique_ptr<Hook>> hooks_;
  boost::asio::io_context& actor_ioc_;
  store::Store& actor_store_;
  HookRunnerOptions options_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  int64_t last_seq_ = 0;   // guarded by mutex_
  bool stopping_ = false;  // guarded by mutex_
  int running_ = 0;        // threads not yet finished; guarded by mutex_
  std::condition_variable finished_;
  // Set after stop_grace: cuts running deliveries short (a flag for POSTs, a pipe for commands).
  std::atomic<bool> cancel_{false};
  int cancel_pipe_[2] = {-1, -1};
};

}  // namespace gpuq::daemon
