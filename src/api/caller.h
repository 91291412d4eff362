// SPDX-License-Identifier: Apache-2.0
// Who sent a request to the API, as the permission checks (api/permissions.h) see them: on the
// unix socket the kernel's word (SO_PEERCRED), over TCP the owner of the token it showed. A
// single-user daemon (today's mode) has one person behind every request it lets in, so every
// caller is an admin there. Plain data; thread-safe.
#pragma once

#include <sys/types.h>

#include <string>

namespace gpuq::api {

struct Caller {
  // The login name recorded as the user of the jobs it submits; "" for the daemon's own user
  // over TCP (the queue records the daemon's user then).
  std::string user;
  // May act on every job and on the daemon itself (gc, drain, release --attention): root, the
  // daemon's own user, the names and @groups of [users] admins; everyone in single-user mode.
  bool admin = true;
  uid_t uid = 0;  // the unix peer's uid, or the session's; 0 for the daemon's own token
};

}  // namespace gpuq::api
