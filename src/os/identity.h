// SPDX-License-Identifier: Apache-2.0
// Who a job's code runs as. A daemon started as root (a shared box, docs/lab.md) runs each job,
// and each REQUIRES / DONE_IF test, as the user who submitted it; any other daemon runs them as
// itself. This file looks users up (getpwnam_r, getgrouplist; identity.cc) and drops a forked
// child's privileges to one of them (setgroups, setgid, setuid: what login(1) does after
// initgroups; become_user.cc).
// The look-ups may use NSS: call them before a fork, never in a forked child of a threaded
// process; become_user is async-signal-safe for that child. Thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <sys/types.h>
#include <vector>

#include "base/status.h"

namespace gpuq::os {

struct UserIdentity {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups, the primary one included
  std::string login;
  std::string home;
  std::string shell;
};

// Whether a daemon whose effective uid is `daemon_euid` runs the work of `login` as that user:
// only a root daemon does, and only for a login other than root ("" is an older job's: the
// daemon's own).
bool runs_as_submitter(uid_t daemon_euid, const std::string& login);

// The passwd entry of `login`, without its groups. kNotFound naming the login when the system
// has no such user.
Result<UserIdentity> passwd_entry(const std::string& login);
// `login`'s supplementary groups (getgrouplist), `gid` among them.
Result<std::vector<gid_t>> groups_of(const std::string& login, gid_t gid);
// Both: the identity ready for become_user.
Result<UserIdentity> identity_of_login(const std::string& login);

// In a forked child, before exec: setgroups, setgid, setuid, no capability left (the ambient and
// inheritable sets are cleared too), then checks that every uid and gid is the target's and
// that setuid(0) now fails. Returns 0, or the errno of the step that failed (EPERM when a check
// does not hold): the child must then exit without running anything. Async-signal-safe.
int become_user(uid_t uid, gid_t gid, const gid_t* groups, size_t group_count);

}  // namespace gpuq::os
