// SPDX-License-Identifier: Apache-2.0
// Who is on the other end of a unix socket connection, and what that person may do: the
// peer's uid from the kernel (SO_PEERCRED), its login name, its groups, and the two questions
// the daemon asks of them (docs/lab.md): may it connect at all (single-user: the daemon's own
// user or root; a system daemon: also the members of [users] group), and is it an admin.
// Name and group lookups go through NSS (a directory service may be slow), so they are cached:
// names for good, groups for a minute. Thread-safe.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace gpuq::api {

// The uid of the peer on unix socket `fd`; nullopt when it cannot be read.
std::optional<uid_t> peer_uid(int fd);
// Whether the peer on unix socket `fd` is the daemon's own user or root. A peer whose
// credentials cannot be read is refused, not let through.
bool peer_is_trusted(int fd);
// The login name of `uid` (its number when it has none).
std::string login_name(uid_t uid);
// The names of the groups `login` belongs to (its primary group and the others); empty when
// it is not a known user.
std::vector<std::string> groups_of(const std::string& login);

// The daemon's rule for its socket's peers and their rights.
struct PeerRules {
  bool shared = false;              // a system daemon (gpuq daemon --system)
  std::string group;                // shared: the group whose members may connect
  std::vector<std::string> admins;  // shared: [users] admins (logins, "@group")
};

// Whether `uid` may use the socket: the daemon's user and root always; with `shared`, members
// of `rules.group` too.
bool may_connect(uid_t uid, const PeerRules& rules);
// Whether `uid` (named `login`) is an admin: everyone let into a single-user daemon; else root,
// the daemon's user, and those [users] admins names or whose groups it names.
bool is_admin(uid_t uid, const std::string& login, const PeerRules& rules);

}  // namespace gpuq::api
