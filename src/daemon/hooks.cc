// SPDX-License-Identifier: Apache-2.0
#include "daemon/hooks.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fnmatch.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "base/time.h"
#include "daemon/hook_delivery.h"

namespace gpuq::daemon {

namespace asio = boost::asio;

bool hook_matches(const std::vector<std::string>& globs, std::string_view kind) {
  std::string text(kind);
  return std::any_of(globs.begin(), globs.end(), [&](const std::string& glob) {
    return ::fnmatch(glob.c_str(), text.c_str(), 0) == 0;
  });
}

int64_t hook_retry_delay_ms(const HookConfig& hook, int failures) {
  int64_t delay = std::max<int64_t>(hook.retry_min_ms, 1);
  for (int i = 1; i < failures && delay < hook.retry_max_ms; ++i) delay *= 2;
  return std::min(delay, std::max(hook.retry_max_ms, hook.retry_min_ms));
}

std::string redacted_hook_target(const HookConfig& hook) {
  if (hook.url.empty()) {
    const std::string& command = hook.command;
    size_t start = command.find_first_not_of(" \t");
    if (start == std::string::npos) return "";
    size_t end = command.find_first_of(" \t\n", start);
    bool more = end != std::string::npos && command.find_first_not_of(" \t\n", end) != std::string::npos;
    return command.substr(start, end - start) + (more ? " …" : "");
  }
  const std::string& url = hook.url;
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return "…";  // not a URL config.toml accepts; nothing shown
  size_t authority = scheme_end + 3;
  size_t path = url.find_first_of("/?#", authority);
  std::string host = url.substr(authority, path == std::string::npos ? std::string::npos : path - authority);
  if (size_t at = host.rfind('@'); at != std::string::npos) host = host.substr(at + 1);  // userinfo
  bool rest = path != std::string::npos && url.size() > path + (url[path] == '/' ? 1 : 0);
  return url.substr(0, authority) + host + (rest ? "/…" : "");
}

nlohmann::json hook_status_to_json(const HookStatus& status) {
  auto time_or_null = [](int64_t ms) {
    return ms > 0 ? nlohmann::json(format_rfc3339(ms)) : nlohmann::json(nullptr);
  };
  return {
      {"name", status.name},
      {"type", status.type},
      {"target", status.target},
      {"events", status.events},
      {"cursor", status.cursor},
      {"last_seq", status.last_seq},
      {"lag", status.lag},
      {"delivered", status.delivered},
      {"failures", status.failures},
      {"last_error",
       status.last_error.empty() ? nlohmann::json(nullptr) : nlohmann::json(status.last_error)},
      {"last_error_at", time_or_null(status.last_error_at_ms)},
      {"failing_since", time_or_null(status.failing_since_ms)},
      {"retry_at", time_or_null(status.retry_at_ms)},
  };
}

HookRunner::HookRunner(std::vector<HookConfig> hooks, asio::io_context& actor_ioc,
                       store::Store& actor_store, HookRunnerOptions options)
    : actor_ioc_(actor_ioc), actor_store_(actor_store), options_(std::move(options)) {
  for (HookConfig& config : hooks) {
    auto hook = std::make_unique<Hook>();
    hook->config = std::move(config);
    hooks_.push_back(std::move(hook));
  }
}

HookRunner::~HookRunner() {
  stop();
  for (int fd : cancel_pipe_) {
    if (fd >= 0) ::close(fd);
  }
}

Status HookRunner::load() {
  auto stored = actor_store_.hook_cursors();
  if (!stored) return tl::unexpected(stored.error());
  auto last_seq = actor_store_.last_seq();
  if (!last_seq) return tl::unexpected(last_seq.error());
  std::map<std::string, store::Store::HookCursor> by_name;
  for (auto& cursor : *stored) by_name.emplace(cursor.name, std::move(cursor));
  int64_t now = wall_now_ms();
  std::lock_guard lock(mutex_);
  last_seq_ = *last_seq;
  for (auto& hook : hooks_) {
    auto it = by_name.find(hook->config.name);
    if (it == by_name.end()) {
      hook->cursor = *last_seq;
      if (auto committed = actor_store_.commit_hook_cursor(hook->config.name, hook->cursor, 0, now);
          !committed) {
        return committed;
      }
    } else {
      hook->cursor = it->second.seq;
      hook->delivered = it->second.delivered;
      hook->last_error = it->second.last_error;
      hook->last_error_at_ms = it->second.last_error_at_ms;
    }
    hook->committed = hook->cursor;
    hook->acknowledged = hook->cursor;
  }
  return ok();
}

void HookRunner::start() {
  if (hooks_.empty()) return;
  bool any_url = std::any_of(hooks_.begin(), hooks_.end(),
                             [](const auto& hook) { return !hook->config.url.empty(); });
  if (any_url) init_url_delivery();
  if (::pipe2(cancel_pipe_, O_CLOEXEC) != 0) {
    std::perror("gpuq daemon: hooks: pipe");  // commands then stop only at their timeout
  }
  std::lock_guard lock(mutex_);
  for (auto& hook : hooks_) {
    ++running_;
    Hook* target = hook.get();
    hook->thread = std::thread([this, target] {
      try {
        run(*target);
      } catch (const std::exception& e) {
        // A bug must not take the daemon (and the queue) down with one hook; the hook stops
        // and says why in `gpuq hooks`.
        std::fprintf(stderr, "gpuq daemon: hook %s stopped: internal error: %s\n",
                     target->config.name.c_str(), e.what());
        std::lock_guard lock(mutex_);
        target->last_error = std::string("stopped by an internal error: ") + e.what();
        target->last_error_at_ms = wall_now_ms();
      }
      std::lock_guard done(mutex_);
      --running_;
      finished_.notify_all();
    });
  }
}

void HookRunner::notify(int64_t last_seq) {
  std::lock_guard lock(mutex_);
  if (last_seq <= last_seq_) return;
  last_seq_ = last_seq;
  wake_.notify_all();
}

void HookRunner::stop() {
  {
    std::unique_lock lock(mutex_);
    stopping_ = true;
    wake_.notify_all();
    // A delivery in flight may finish on its own (its receiver then sees it once); past the
    // grace it is cut short, and the event is delivered again at the next start.
    if (!finished_.wait_for(lock, options_.stop_grace, [this] { return running_ == 0; })) {
      cancel_ = true;
      if (cancel_pipe_[1] >= 0) (void)!::write(cancel_pipe_[1], "x", 1);
    }
  }
  for (auto& hook : hooks_) {
    if (hook->thread.joinable()) hook->thread.join();
  }
}

Status HookRunner::commit_after_stop() {
  int64_t now = wall_now_ms();
  std::lock_guard lock(mutex_);
  for (auto& hook : hooks_) {
    if (hook->cursor == hook->committed) continue;
    if (auto committed =
            actor_store_.commit_hook_cursor(hook->config.name, hook->cursor, hook->delivered, now);
        !committed) {
      return committed;
    }
    hook->committed = hook->cursor;
  }
  return ok();
}

std::vector<HookStatus> HookRunner::statuses() const {
  std::lock_guard lock(mutex_);
  std::vector<HookStatus> out;
  for (const auto& hook : hooks_) {
    HookStatus status;
    status.name = hook->config.name;
    status.type = hook->config.url.empty() ? "command" : "url";
    status.target = redacted_hook_target(hook->config);
    status.events = hook->config.events;
    status.cursor = hook->cursor;
    status.last_seq = std::max(last_seq_, hook->cursor);
    status.lag = status.last_seq - status.cursor;
    status.delivered = hook->delivered;
    status.failures = hook->failures;
    status.last_error = hook->last_error;
    status.last_error_at_ms = hook->last_error_at_ms;
    status.failing_since_ms = hook->failing_since_ms;
    status.retry_at_ms = hook->retry_at_ms;
    out.push_back(std::move(status));
  }
  return out;
}

void HookRunner::run(Hook& hook) {
  std::unique_ptr<store::Store> log;
  while (true) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
    }
    if (!log) {
      auto opened = store::Store::open(options_.database, true);
      if (!opened) {
        if (!fail_and_wait(hook, "cannot read the event log: " + opened.error().message)) return;
        continue;
      }
      log = std::move(*opened);
    }
    int64_t cursor = 0;
    int64_t known = 0;  // read before the log, so a notify() racing the read still wakes us
    {
      std::lock_guard lock(mutex_);
      cursor = hook.cursor;
      known = last_seq_;
    }
    auto events = log->events_after(cursor, options_.batch);
    if (!events) {
      if (!fail_and_wait(hook, "cannot read the event log: " + events.error().message)) return;
      continue;
    }
    if (events->empty()) {
      wait_for_events(std::max(cursor, known));
      continue;
    }
    notify(events->back().seq);
    for (const Event& event : *events) {
      if (!hook_matches(hook.config.events, event.kind)) {
        advance(hook, event.seq, false);
        continue;
      }
      if (!deliver_until_done(hook, event)) return;
    }
    // Passed-over events are committed once per batch rather than one by one.
    post_commit(hook);
  }
}

bool HookRunner::deliver_until_done(Hook& hook, const Event& event) {
  while (true) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return false;
    }
    auto delivered = attempt(hook, event);
    if (delivered) {
      advance(hook, event.seq, true);
      return true;
    }
    if (!fail_and_wait(hook, fmt::format("event {} ({}): {}", event.seq, event.kind,
                                         delivered.error().message))) {
      return false;
    }
  }
}

Status HookRunner::attempt(const Hook& hook, const Event& event) {
  if (!hook.config.url.empty()) return deliver_by_url(hook.config, event, cancel_);
  return deliver_by_command(hook.config, event, cancel_pipe_[0]);
}

// A delivered event's cursor is committed before the next delivery starts, so a crash can
// repeat only the last event delivered: what a receiver sees never goes back further.
void HookRunner::advance(Hook& hook, int64_t seq, bool delivered) {
  {
    std::lock_guard lock(mutex_);
    hook.cursor = seq;
    if (!delivered) return;
    ++hook.delivered;
    hook.failures = 0;
    hook.failing_since_ms = 0;
    hook.retry_at_ms = 0;
  }
  post_commit(hook);
  std::unique_lock lock(mutex_);
  wake_.wait(lock, [&] { return stopping_ || hook.acknowledged >= seq; });
}

// At most one commit per hook waits in the actor's queue; it writes the cursor reached when it
// runs, so passed-over events cost the actor one write per batch, not one each.
void HookRunner::post_commit(Hook& hook) {
  {
    std::lock_guard lock(mutex_);
    if (hook.commit_posted || hook.cursor == hook.committed) return;
    hook.commit_posted = true;
  }
  asio::post(actor_ioc_, [this, &hook] {
    int64_t seq = 0;
    int64_t delivered = 0;
    {
      std::lock_guard lock(mutex_);
      seq = hook.cursor;
      delivered = hook.delivered;
      hook.commit_posted = false;
    }
    auto committed =
        actor_store_.commit_hook_cursor(hook.config.name, seq, delivered, wall_now_ms());
    if (!committed) {
      // Not fatal: the next commit carries the cursor, or a restart delivers again.
      std::fprintf(stderr, "gpuq daemon: hook %s: storing its cursor failed: %s\n",
                   hook.config.name.c_str(), committed.error().message.c_str());
    }
    std::lock_guard lock(mutex_);
    if (committed) hook.committed = std::max(hook.committed, seq);
    hook.acknowledged = std::max(hook.acknowledged, seq);
    wake_.notify_all();
  });
}

bool HookRunner::fail_and_wait(Hook& hook, const std::string& error) {
  int64_t now = wall_now_ms();
  std::unique_lock lock(mutex_);
  if (stopping_) return false;  // a delivery cut short by stop() is no failure of the receiver
  ++hook.failures;
  hook.last_error = error;
  hook.last_error_at_ms = now;
  if (hook.failing_since_ms == 0) hook.failing_since_ms = now;
  int64_t delay = hook_retry_delay_ms(hook.config, hook.failures);
  hook.retry_at_ms = now + delay;
  std::string name = hook.config.name;
  asio::post(actor_ioc_, [this, name, error, now] {
    if (auto recorded = actor_store_.record_hook_error(name, error, now); !recorded) {
      std::fprintf(stderr, "gpuq daemon: hook %s: storing its error failed: %s\n", name.c_str(),
                   recorded.error().message.c_str());
    }
  });
  bool stopped = wake_.wait_for(lock, Millis(delay), [this] { return stopping_; });
  hook.retry_at_ms = 0;
  return !stopped;
}

void HookRunner::wait_for_events(int64_t known) {
  std::unique_lock lock(mutex_);
  wake_.wait_for(lock, options_.poll_interval,
                 [this, known] { return stopping_ || last_seq_ > known; });
}

}  // namespace gpuq::daemon
