// SPDX-License-Identifier: Apache-2.0
// The file operations under the directory store (dir_store.h): reading an object with the
// facts its ETag comes from, writing a temporary file to rename, walking the tree for a
// listing, and the store's write lock. Paths are absolute; errors are errno's words with the
// path (the store adds its name, the operation and the key).
// Thread rules: the functions are thread-safe; a StoreLock is used from one thread at a time
// (one per store), and its locks exclude every other StoreLock on the same root, in this
// process (a mutex) and in others (flock).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace gpuq::fleet::dir {

// What the store says of a file: its ETag (mtime in ns, inode and size, in hex), size and
// mtime in whole seconds.
struct FileFacts {
  std::string etag;
  int64_t size = 0;
  int64_t modified_ms = 0;
};

// The facts of the regular file at `path`; kNotFound when there is none (or a folder is).
Result<FileFacts> stat_object(const std::string& path);

struct FileContent {
  std::string body;
  FileFacts facts;  // of the very file read (a rename during the read does not mix two)
};

// The regular file at `path`, whole; kNotFound when there is none. With `skip_body_if_etag`
// equal to its ETag, the body is not read.
Result<FileContent> read_object(const std::string& path, const std::string& skip_body_if_etag);

struct TempFile {
  std::string path;
  FileFacts facts;  // final: a rename keeps them
};

// Writes `body` to a new file in `dir` (made, with its parents, if missing) whose name holds
// '#' (no key does), fsync'd, with its mtime set to now plus random nanoseconds (ETags of two
// writes in one clock tick differ). The caller renames or removes it.
Result<TempFile> write_temp(const std::string& dir, std::string_view body);

// As write_temp, with the content copied from the open file `source` (from its start, in
// 1 MiB pieces: bounded memory for any size).
Result<TempFile> copy_to_temp(const std::string& dir, int source, const std::string& source_path);

// Copies `source` from its start to its end onto `target` (at target's offset), 1 MiB at a
// time; the number of bytes copied. The paths are for messages.
Result<int64_t> copy_stream(int source, int target, const std::string& source_path,
                            const std::string& target_path);

// fsync(2) of a directory, after a rename in it; best effort (some file systems refuse).
void sync_dir(const std::string& dir);

// Removes the empty folders from `dir` up to, not including, `root`.
void remove_empty_dirs(const std::string& root, std::string dir);

// Every regular file under `root` whose path relative to it begins with `prefix`, relative
// to `root`, unsorted; folders that cannot hold such a path are not entered. Symbolic links
// are not followed; entries that vanish during the walk are skipped.
Status walk(const std::string& root, std::string_view prefix, std::vector<std::string>& out);

// The write lock of one root.
class StoreLock {
 public:
  explicit StoreLock(std::string root);
  ~StoreLock();
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;

  // Held until destroyed.
  class Held {
   public:
    Held(Held&& other) noexcept;
    Held& operator=(Held&&) = delete;
    ~Held();

   private:
    friend class StoreLock;
    Held(std::unique_lock<std::timed_mutex> in_process, int fd);
    std::unique_lock<std::timed_mutex> in_process_;
    int fd_;
  };

  // Waits at most `timeout_ms`; kUnavailable when another writer holds the lock longer, or
  // when the file system offers no locks.
  Result<Held> hold(int64_t timeout_ms);

 private:
  std::string root_;
  std::string path_;  // ROOT/.gpuq-lock
  std::shared_ptr<std::timed_mutex> in_process_;
  int fd_ = -1;  // opened at the first hold
};

}  // namespace gpuq::fleet::dir
