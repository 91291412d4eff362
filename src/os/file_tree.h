// SPDX-License-Identifier: Apache-2.0
// Measuring and removing a directory tree through file descriptors, never by path: for the root
// daemon removing a job's directory, which belongs to the job's user. A user may plant links
// (or swap a directory for a link while the removal runs); each directory is opened with
// O_NOFOLLOW relative to its parent's fd and entries are removed with unlinkat, so a link is
// removed itself and what it names is never entered, measured or deleted.
// Plain system calls, no state: thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace gpuq::os {

// The bytes of the regular files in the tree at `path` (links not followed); 0 when it is gone.
int64_t tree_bytes(const std::string& path);

// Removes the tree at `path` (a directory or a single file); a tree that is gone already is
// fine. `path` itself is not followed either when it is a link: the link is removed.
Status remove_tree(const std::string& path);

}  // namespace gpuq::os
