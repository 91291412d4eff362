// SPDX-License-Identifier: Apache-2.0
// The peer of a unix socket and its rights: see peer_identity.h.
#include "api/peer_identity.h"

#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>

namespace gpuq::api {
namespace {

constexpr auto kGroupsFresh = std::chrono::seconds(60);

struct CachedGroups {
  std::vector<std::string> names;
  std::chrono::steady_clock::time_point read_at;
};

std::optional<ucred> peer_credentials(int fd) {
  ucred peer{};
  socklen_t len = sizeof peer;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 || len != sizeof peer) return std::nullopt;
  return peer;
}

std::vector<std::string> read_groups(const std::string& login) {
  std::string buf(16 << 10, '\0');
  passwd pw{};
  passwd* found = nullptr;
  if (::getpwnam_r(login.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) return {};
  int count = 64;
  std::vector<gid_t> gids(static_cast<size_t>(count));
  if (::getgrouplist(login.c_str(), pw.pw_gid, gids.data(), &count) < 0) {
    gids.resize(static_cast<size_t>(count));
    if (::getgrouplist(login.c_str(), pw.pw_gid, gids.data(), &count) < 0) return {};
  }
  gids.resize(static_cast<size_t>(count));
  std::vector<std::string> names;
  std::string group_buf(16 << 10, '\0');
  for (gid_t gid : gids) {
    group gr{};
    group* g = nullptr;
    if (::getgrgid_r(gid, &gr, group_buf.data(), group_buf.size(), &g) == 0 && g != nullptr) {
      names.emplace_back(g->gr_name);
    }
  }
  return names;
}

bool in_group(const std::string& login, const std::string& group) {
  auto names = groups_of(login);
  return std::find(names.begin(), names.end(), group) != names.end();
}

}  // namespace

std::optional<uid_t> peer_uid(int fd) {
  auto peer = peer_credentials(fd);
  if (!peer) return std::nullopt;
  return peer->uid;
}

bool peer_is_trusted(int fd) {
  auto uid = peer_uid(fd);
  return uid && (*uid == ::getuid() || *uid == 0);
}

std::string login_name(uid_t uid) {
  static std::mutex mutex;
  static std::map<uid_t, std::string> names;
  std::lock_guard lock(mutex);
  if (auto it = names.find(uid); it != names.end()) return it->second;
  std::string buf(16 << 10, '\0');
  passwd pw{};
  passwd* found = nullptr;
  std::string name = std::to_string(uid);  // as os::user_name names a uid without a name
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr &&
      found->pw_name != nullptr && found->pw_name[0] != '\0') {
    name = found->pw_name;
  }
  names.emplace(uid, name);
  return name;
}

std::vector<std::string> groups_of(const std::string& login) {
  static std::mutex mutex;
  static std::map<std::string, CachedGroups> cache;
  auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mutex);
    if (auto it = cache.find(login); it != cache.end() && now - it->second.read_at < kGroupsFresh) {
      return it->second.names;
    }
  }
  auto names = read_groups(login);
  std::lock_guard lock(mutex);
  cache[login] = {names, now};
  return names;
}

bool may_connect(uid_t uid, const PeerRules& rules) {
  if (uid == 0 || uid == ::getuid()) return true;
  return rules.shared && !rules.group.empty() && in_group(login_name(uid), rules.group);
}

bool is_admin(uid_t uid, const std::string& login, const PeerRules& rules) {
  if (!rules.shared || uid == 0 || uid == ::getuid()) return true;
  for (const std::string& admin : rules.admins) {
    if (admin.starts_with('@') ? in_group(login, admin.substr(1)) : admin == login) return true;
  }
  return false;
}

}  // namespace gpuq::api
