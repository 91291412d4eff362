// SPDX-License-Identifier: Apache-2.0
// The dashboard sessions of a system daemon's users (docs/lab.md, "The dashboard"): each user
// who runs `gpuq dashboard` gets a token of their own from the daemon over the unix socket,
// and the TCP listener's requests that show it act with that user's rights. One token per
// user, kept until `gpuq dashboard --revoke`; saved in the home's `sessions` file (0600, the
// daemon's), so a restart keeps them. The daemon's own token (base/token_file.h) is not one of
// these: it stays the daemon user's. Thread-safe (one mutex).
#pragma once

#include <sys/types.h>

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace gpuq::api {

struct UserSession {
  std::string user;
  uid_t uid = 0;
};

class UserSessions {
 public:
  // Reads the sessions saved at `path` (none when there is no file; a line that cannot be read
  // is dropped, its user gets a new token when asked).
  explicit UserSessions(std::string path);

  // The token of `session.user`, made and saved when the user has none.
  Result<std::string> token_for(const UserSession& session);
  // Forgets `user`'s token (saved at once); false when the user had none.
  Result<bool> revoke(const std::string& user);
  // The session whose token is `given`, comparing against every token in constant time.
  std::optional<UserSession> find(std::string_view given) const;

 private:
  struct Entry {
    UserSession session;
    std::string token;
  };
  Status save() const;  // with mutex_ held

  std::string path_;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> by_user_;
};

}  // namespace gpuq::api
