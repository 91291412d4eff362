// SPDX-License-Identifier: Apache-2.0
// The local side of a download: a file written beside its target under a hidden name
// (".NAME.gpuq-partial-RANDOM": the leading dot keeps it out of `# gpuq-out:` globs), made
// durable (fsync) and renamed over the target only when the caller says the bytes are
// checked. Until then the target is as it was; a PartialFile destroyed without commit()
// removes its file. Also: the MD5 of a file or of a range of it, read in bounded memory.
// Thread rules: a PartialFile belongs to one thread, but its descriptor may be written with
// pwrite from several at once (disjoint ranges).
#pragma once

#include <cstdint>
#include <string>

#include "base/libcrypto.h"
#include "base/status.h"

namespace gpuq::fleet {

class PartialFile {
 public:
  // Makes the target's folders and opens a new partial file beside it, sized `size` (so that
  // ranges may be written in any order).
  static Result<PartialFile> open(const std::string& target, int64_t size);
  PartialFile(PartialFile&& other) noexcept;
  PartialFile& operator=(PartialFile&&) = delete;
  ~PartialFile();

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  // fsync, rename over the target, fsync of its folder.
  Status commit();

 private:
  PartialFile(std::string target, std::string path, int fd)
      : target_(std::move(target)), path_(std::move(path)), fd_(fd) {}
  std::string target_;
  std::string path_;
  int fd_;
};

// The MD5 of `length` bytes of `fd` from `offset`, read with pread in 1 MiB pieces; an
// error names `path` (for messages) and says when the file is shorter than the range.
Result<Md5Digest> md5_of_range(int fd, int64_t offset, int64_t length, const std::string& path);

}  // namespace gpuq::fleet
