// SPDX-License-Identifier: Apache-2.0
// become_user (os/identity.h), apart from the look-ups of identity.cc: a binary that links the
// code which drops privileges does not link NSS with it (the static light client, bin/gpuq).
#include <grp.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "os/identity.h"

namespace gpuq::os {

int become_user(uid_t uid, gid_t gid, const gid_t* groups, size_t group_count) {
  if (::setgroups(group_count, groups) != 0) return errno;
  if (::setresgid(gid, gid, gid) != 0) return errno;
  if (::setresuid(uid, uid, uid) != 0) return errno;
  // Root's inheritable and ambient sets survive a setuid; a job must hold nothing at all.
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capset, &header, none) != 0) return errno;
  uid_t r, e, s;
  gid_t rg, eg, sg;
  if (::getresuid(&r, &e, &s) != 0 || r != uid || e != uid || s != uid) return EPERM;
  if (::getresgid(&rg, &eg, &sg) != 0 || rg != gid || eg != gid || sg != gid) return EPERM;
  if (uid != 0 && ::setuid(0) == 0) return EPERM;
  return 0;
}

}  // namespace gpuq::os
