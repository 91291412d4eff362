// SPDX-License-Identifier: Apache-2.0
// The ObjectStore on a shared directory (NFS): an object is the file ROOT/KEY, with its
// content as is, so people can read a fleet's files with cat.
//  - Writes go to a temporary file beside the object (a name with '#', which no key has),
//    fsync'd, then renamed over it; the directory is fsync'd after.
//  - Every write (put, create, replace, remove) holds an exclusive lock: flock(2) on
//    ROOT/.gpuq-lock (Linux's NFS client turns it into an NFS lock) and, since NFS locks are
//    per process, a mutex shared by every store of this process on the same root. Under it,
//    create's "absent" and replace's "same ETag" are checked and the rename made, so a
//    condition cannot change between check and write. Reads take no lock: a rename is atomic.
//  - ETag: the file's mtime in ns, inode and size. Every write renames a new file (a new
//    inode), and its mtime is set to now with random nanoseconds, so a rewrite with the same
//    content, or a later file that reuses a freed inode, gets another ETag. modified_ms is
//    the mtime in whole seconds (like S3's Last-Modified); store_now_ms is this machine's
//    clock.
// A key cannot be both an object and a folder of objects here ("a" and "a/b"); writing one
// when the other exists is a kIoError. The key ".gpuq-lock" is refused. Waiting for the lock
// longer than timeout_ms is kUnavailable; a hung NFS mount blocks a call (the kernel's, not
// ours, to time out).
// Thread rules: a store is used from one thread at a time; stores on one root may be used
// from many threads and processes at once.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "fleet/object_store.h"

namespace gpuq::fleet {

// A store on the directory `root` (absolute, no trailing '/'), which must exist: a missing
// root is more likely an unmounted share than a store to create.
Result<std::unique_ptr<ObjectStore>> open_dir_store(const std::string& root,
                                                    const StoreOptions& options);

// The name of the lock file under a store's root; never listed.
inline constexpr const char* kDirStoreLockName = ".gpuq-lock";

}  // namespace gpuq::fleet
