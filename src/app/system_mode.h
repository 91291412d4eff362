// SPDX-License-Identifier: Apache-2.0
// What `gpuq daemon --system` (docs/lab.md) sets up besides a single-user daemon: the check
// that it runs as root, a home the box's users may pass through to their own job directories
// (but not list), and the system socket, open to [users] group. serve() calls these in order
// at start; plain functions over the file system and the user database; thread-safe.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/paths.h"
#include "base/status.h"

namespace gpuq::app {

// A system daemon starts each job as its submitter, which only root can do: refuses any other
// user, saying how to start it.
Status check_system_user();

// Makes the home and its jobs/ directory 0711: a job's own directory (its submitter's, 0700)
// is reached through them; nothing in them can be listed or read by others.
Status open_home_to_users(const HomeLayout& layout);

struct SystemSocket {
  std::string path;  // where to listen
  gid_t group = 0;   // the socket's group: [users] group
};

// Looks up `group` ([users] group; an unknown one is refused, saying how to create it), makes
// the socket's directory (0755, root's) and refuses when a daemon already answers at `path`
// (another system daemon of this box), so that its socket is not taken from it.
Result<SystemSocket> prepare_system_socket(const std::string& path, const std::string& group);

}  // namespace gpuq::app
