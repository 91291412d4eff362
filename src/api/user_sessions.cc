// SPDX-License-Identifier: Apache-2.0
// The users' dashboard sessions: see user_sessions.h.
#include "api/user_sessions.h"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "api/http_policy.h"
#include "base/token_file.h"

namespace gpuq::api {

UserSessions::UserSessions(std::string path) : path_(std::move(path)) {
  std::ifstream in(path_);
  std::string line;
  while (std::getline(in, line)) {
    auto entry = nlohmann::json::parse(line, nullptr, false);
    if (!entry.is_object() || !entry["user"].is_string() || !entry["uid"].is_number_unsigned() ||
        !entry["token"].is_string() || !is_token(entry["token"].get<std::string>())) {
      continue;
    }
    std::string user = entry["user"].get<std::string>();
    by_user_[user] = {{user, entry["uid"].get<uid_t>()}, entry["token"].get<std::string>()};
  }
}

Result<std::string> UserSessions::token_for(const UserSession& session) {
  std::lock_guard lock(mutex_);
  if (auto it = by_user_.find(session.user); it != by_user_.end() && it->second.session.uid == session.uid) {
    return it->second.token;
  }
  auto token = random_token();
  if (!token) return token;
  by_user_[session.user] = {session, *token};
  if (auto saved = save(); !saved) {
    by_user_.erase(session.user);
    return tl::unexpected(saved.error());
  }
  return token;
}

Result<bool> UserSessions::revoke(const std::string& user) {
  std::lock_guard lock(mutex_);
  auto it = by_user_.find(user);
  if (it == by_user_.end()) return false;
  Entry kept = it->second;
  by_user_.erase(it);
  if (auto saved = save(); !saved) {
    by_user_[user] = kept;
    return tl::unexpected(saved.error());
  }
  return true;
}

std::optional<UserSession> UserSessions::find(std::string_view given) const {
  std::lock_guard lock(mutex_);
  std::optional<UserSession> found;
  for (const auto& [user, entry] : by_user_) {
    if (constant_time_equal(given, entry.token) && !found) found = entry.session;
  }
  return found;
}

Status UserSessions::save() const {
  std::string temporary = path_ + ".new";
  {
    std::ofstream out(temporary, std::ios::trunc);  // 0600: the daemon's umask is 077
    for (const auto& [user, entry] : by_user_) {
      out << nlohmann::json{{"user", user}, {"uid", entry.session.uid}, {"token", entry.token}}.dump() << '\n';
    }
    out.flush();
    if (!out) return fail(Code::kIoError, fmt::format("cannot write {}", temporary));
  }
  if (std::rename(temporary.c_str(), path_.c_str()) != 0) {
    return errno_error(fmt::format("cannot replace {}", path_));
  }
  return ok();
}

}  // namespace gpuq::api
