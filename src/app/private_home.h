// SPDX-License-Identifier: Apache-2.0
// Keeps the daemon's state directory private to the user who runs the daemon. The store holds
// every job's environment (tokens included), the runs' logs and the job scripts, and the
// directory holds the socket through which everything can be done; so the daemon refuses a
// home that another user could change, and tightens one that others could only read.
// What is checked: the home itself (its owner and mode), not its parents. What is tightened at
// start: the home, and the files an older daemon created with wider modes (gpuq.db and its
// -wal/-shm, daemon.log, config.toml). Files the daemon creates now are private from birth (its
// umask is 077); older jobs/ directories are left as they were, unreachable under the 0700 home.
// Plain functions over the file system; thread-safe.
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

#include "base/paths.h"
#include "base/status.h"

namespace gpuq::app {

// Checks (and, when only readable by others, tightens) the existing directory `home` for a
// daemon run by `uid`. Refuses, with Code::kFailedPrecondition saying how to fix it, a home that
// is not a directory, belongs to another user, or that group or others may write. Returns the
// warnings to print (a tightened mode), empty when nothing changed. With `pass_through` (a
// system daemon, docs/lab.md) others may keep the search (x) bits, so that the box's users
// reach their own job directories through it.
Result<std::vector<std::string>> make_home_private(const std::string& home, uid_t uid,
                                                   bool pass_through = false);

// Removes the group and other permission bits from the files an older daemon (or a person) may
// have left wider than 0600. Returns one warning per file changed, and per file that could not
// be changed. Symbolic links are left alone (a linked config.toml is the link target's business).
std::vector<std::string> tighten_state_files(const HomeLayout& layout);

}  // namespace gpuq::app
