// SPDX-License-Identifier: Apache-2.0
// The dashboard's browser sessions (docs/dashboard.md, "Sign-in and sessions"): a page that
// shows a token once (the daemon's, or a box user's dashboard token) at POST /v1/session gets
// a session of its own, a random value in an HttpOnly cookie, so the token itself never sits in
// a cookie jar. A session acts as whoever opened it, ends at POST /v1/session/end, when its
// user's dashboard token is revoked, a day after its last use (a restart of the daemon counts
// as one), or a week after it opened; past kMaxBrowserSessionsPerUser of one user's, or
// kMaxBrowserSessions in all, the one unused the longest (the user's own first) makes room; one that the daemon's own token
// opened also ends when that token changes (its file removed and the daemon restarted). Saved in the home's
// `browser-sessions` file (0600, the daemon's), so a restart keeps the pages signed in.
// A value is looked up by its first half and its whole compared in constant time, so the time
// of a lookup tells nothing of a value's secret part. Thread-safe (one mutex).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace gpuq::api {

inline constexpr int64_t kBrowserSessionIdleMs = 24LL * 3600 * 1000;
inline constexpr int64_t kBrowserSessionMaxAgeMs = 7LL * 24 * 3600 * 1000;
inline constexpr size_t kMaxBrowserSessions = 1000;
inline constexpr size_t kMaxBrowserSessionsPerUser = 100;

// Who a session acts as: the daemon's own user (`user` empty) or a box user.
struct BrowserIdentity {
  std::string user;
  uid_t uid = 0;
  bool operator==(const BrowserIdentity&) const = default;
};

class BrowserSessions {
 public:
  // Reads the sessions saved at `path` (none when there is no file; a line that cannot be
  // read, or a session past its week, is dropped). `now_ms`: the wall clock at the start, the
  // last use of every session read.
  BrowserSessions(std::string path, int64_t now_ms);

  // The daemon's token now: a session it opened under another token is no longer valid. Kept
  // as a digest (std::hash of the token), never the token. Call before serving.
  void set_daemon_token(std::string_view token);

  // A new session for `who`: its value (64 hex characters), saved before it is returned.
  Result<std::string> open(const BrowserIdentity& who, int64_t now_ms);
  // Who the session `value` acts as, when it is open and not expired at `now_ms` (its last
  // use becomes `now_ms`); nullopt otherwise.
  std::optional<BrowserIdentity> use(std::string_view value, int64_t now_ms);
  // Ends the session `value`; false when there was none.
  Result<bool> end(std::string_view value);
  // Ends every session of `user` (a box user's dashboard token was revoked); how many.
  Result<size_t> end_all_of(const std::string& user);
  size_t size() const;

 private:
  struct Entry {
    std::string value;
    BrowserIdentity who;
    int64_t opened_ms = 0;
    int64_t used_ms = 0;
    uint64_t token_digest = 0;  // the daemon's token's, for a session it opened
  };
  bool expired(const Entry& entry, int64_t now_ms) const;  // too old, or another token's
  static bool too_old(const Entry& entry, int64_t now_ms);
  Status save() const;  // with mutex_ held

  std::string path_;
  uint64_t token_digest_ = 0;
  mutable std::mutex mutex_;
  std::map<std::string, Entry, std::less<>> by_id_;  // by the value's first half
};

}  // namespace gpuq::api
