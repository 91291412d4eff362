// SPDX-License-Identifier: Apache-2.0
#include "os/identity.h"

#include <cerrno>
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <fmt/format.h>

namespace gpuq::os {

bool runs_as_submitter(uid_t daemon_euid, const std::string& login) {
  return daemon_euid == 0 && !login.empty() && login != "root";
}

Result<UserIdentity> passwd_entry(const std::string& login) {
  struct passwd entry{};
  struct passwd* found = nullptr;
  std::vector<char> buffer(16384);
  int rc;
  while ((rc = ::getpwnam_r(login.c_str(), &entry, buffer.data(), buffer.size(), &found)) == ERANGE &&
         buffer.size() < (1u << 20)) {
    buffer.resize(buffer.size() * 2);
  }
  if (rc != 0) return errno_error(fmt::format("looking up the user {}", login), rc);
  if (!found) return fail(Code::kNotFound, fmt::format("there is no user {} on this machine", login));
  UserIdentity who;
  who.uid = found->pw_uid;
  who.gid = found->pw_gid;
  who.login = found->pw_name;
  who.home = found->pw_dir ? found->pw_dir : "";
  who.shell = found->pw_shell && *found->pw_shell ? found->pw_shell : "/bin/sh";
  return who;
}

Result<std::vector<gid_t>> groups_of(const std::string& login, gid_t gid) {
  std::vector<gid_t> groups(64);
  for (int attempt = 0; attempt < 8; ++attempt) {
    int count = static_cast<int>(groups.size());
    if (::getgrouplist(login.c_str(), gid, groups.data(), &count) >= 0) {
      groups.resize(static_cast<size_t>(count));
      return groups;
    }
    groups.resize(static_cast<size_t>(std::max(count, static_cast<int>(groups.size()) * 2)));
  }
  return fail(Code::kIoError, fmt::format("cannot list the groups of {}", login));
}

Result<UserIdentity> identity_of_login(const std::string& login) {
  auto who = passwd_entry(login);
  if (!who) return who;
  auto groups = groups_of(who->login, who->gid);
  if (!groups) return tl::unexpected(groups.error());
  who->groups = std::move(*groups);
  return who;
}

}  // namespace gpuq::os
