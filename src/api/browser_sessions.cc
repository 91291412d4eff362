// SPDX-License-Identifier: Apache-2.0
// The dashboard's browser sessions: see browser_sessions.h.
#include "api/browser_sessions.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "api/http_policy.h"
#include "base/token_file.h"

namespace gpuq::api {
namespace {

constexpr size_t kIdChars = kTokenHexChars / 2;

std::string_view id_of(std::string_view value) { return value.substr(0, kIdChars); }

}  // namespace

BrowserSessions::BrowserSessions(std::string path, int64_t now_ms) : path_(std::move(path)) {
  std::ifstream in(path_);
  std::string line;
  while (std::getline(in, line)) {
    auto saved = nlohmann::json::parse(line, nullptr, false);
    if (!saved.is_object() || !saved["value"].is_string() || !saved["user"].is_string() ||
        !saved["uid"].is_number_unsigned() || !saved["opened_ms"].is_number_integer()) {
      continue;
    }
    Entry entry{saved["value"].get<std::string>(),
                {saved["user"].get<std::string>(), saved["uid"].get<uid_t>()},
                saved["opened_ms"].get<int64_t>(),
                now_ms,
                saved["token_digest"].is_number_unsigned() ? saved["token_digest"].get<uint64_t>() : 0};
    // Its token is judged when it is used: the daemon's is set after this.
    if (!is_token(entry.value) || too_old(entry, now_ms)) continue;
    std::string id(id_of(entry.value));
    by_id_[id] = std::move(entry);
  }
}

void BrowserSessions::set_daemon_token(std::string_view token) {
  std::lock_guard lock(mutex_);
  token_digest_ = std::hash<std::string_view>{}(token);
}

bool BrowserSessions::expired(const Entry& entry, int64_t now_ms) const {
  if (entry.who.user.empty() && entry.token_digest != token_digest_) return true;  // another token's
  return too_old(entry, now_ms);
}

bool BrowserSessions::too_old(const Entry& entry, int64_t now_ms) {
  return now_ms - entry.used_ms >= kBrowserSessionIdleMs || now_ms - entry.opened_ms >= kBrowserSessionMaxAgeMs ||
         now_ms < entry.opened_ms - kBrowserSessionIdleMs;  // a clock set far back: start again
}

Result<std::string> BrowserSessions::open(const BrowserIdentity& who, int64_t now_ms) {
  auto value = random_token();
  if (!value) return value;
  std::lock_guard lock(mutex_);
  std::erase_if(by_id_, [&](const auto& item) { return expired(item.second, now_ms); });
  std::map<std::string, Entry, std::less<>> before = by_id_;
  // Room is made among the user's own sessions first, so that nobody signs others out.
  auto least_used = [this](auto keep) {
    auto oldest = by_id_.end();
    for (auto it = by_id_.begin(); it != by_id_.end(); ++it) {
      if (keep(it->second) && (oldest == by_id_.end() || it->second.used_ms < oldest->second.used_ms)) oldest = it;
    }
    if (oldest != by_id_.end()) by_id_.erase(oldest);
  };
  auto theirs = [&who](const Entry& entry) { return entry.who.user == who.user; };
  if (static_cast<size_t>(std::count_if(by_id_.begin(), by_id_.end(), [&](const auto& item) {
        return theirs(item.second);
      })) >= kMaxBrowserSessionsPerUser) {
    least_used(theirs);
  }
  if (by_id_.size() >= kMaxBrowserSessions) least_used([](const Entry&) { return true; });
  by_id_[std::string(id_of(*value))] = Entry{*value, who, now_ms, now_ms, who.user.empty() ? token_digest_ : 0};
  if (auto saved = save(); !saved) {
    by_id_ = std::move(before);
    return tl::unexpected(saved.error());
  }
  return value;
}

std::optional<BrowserIdentity> BrowserSessions::use(std::string_view value, int64_t now_ms) {
  if (value.size() != kTokenHexChars) return std::nullopt;
  std::lock_guard lock(mutex_);
  auto it = by_id_.find(id_of(value));
  if (it == by_id_.end() || !constant_time_equal(value, it->second.value)) return std::nullopt;
  if (expired(it->second, now_ms)) {
    by_id_.erase(it);  // the file forgets it at the next save
    return std::nullopt;
  }
  it->second.used_ms = std::max(it->second.used_ms, now_ms);
  return it->second.who;
}

Result<bool> BrowserSessions::end(std::string_view value) {
  std::lock_guard lock(mutex_);
  auto it = by_id_.find(id_of(value));
  if (value.size() != kTokenHexChars || it == by_id_.end() || !constant_time_equal(value, it->second.value)) {
    return false;
  }
  Entry kept = it->second;
  by_id_.erase(it);
  if (auto saved = save(); !saved) {
    by_id_[std::string(id_of(kept.value))] = std::move(kept);
    return tl::unexpected(saved.error());
  }
  return true;
}

Result<size_t> BrowserSessions::end_all_of(const std::string& user) {
  std::lock_guard lock(mutex_);
  std::map<std::string, Entry, std::less<>> before = by_id_;
  size_t ended = std::erase_if(by_id_, [&](const auto& item) { return item.second.who.user == user; });
  if (ended == 0) return ended;
  if (auto saved = save(); !saved) {
    by_id_ = std::move(before);
    return tl::unexpected(saved.error());
  }
  return ended;
}

size_t BrowserSessions::size() const {
  std::lock_guard lock(mutex_);
  return by_id_.size();
}

Status BrowserSessions::save() const {
  std::string temporary = path_ + ".new";
  {
    std::ofstream out(temporary, std::ios::trunc);
    for (const auto& [id, entry] : by_id_) {
      out << nlohmann::json{{"value", entry.value},
                            {"user", entry.who.user},
                            {"uid", entry.who.uid},
                            {"opened_ms", entry.opened_ms},
                            {"token_digest", entry.token_digest}}
                 .dump()
          << '\n';
    }
    out.flush();
    if (!out) return fail(Code::kIoError, fmt::format("cannot write {}", temporary));
  }
  if (::chmod(temporary.c_str(), 0600) != 0) return errno_error(fmt::format("cannot make {} private", temporary));
  if (std::rename(temporary.c_str(), path_.c_str()) != 0) {
    return errno_error(fmt::format("cannot replace {}", path_));
  }
  return ok();
}

}  // namespace gpuq::api
