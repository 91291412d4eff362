// SPDX-License-Identifier: Apache-2.0
#include "fleet/partial_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "fleet/layout.h"

namespace gpuq::fleet {

Result<PartialFile> PartialFile::open(const std::string& target, int64_t size) {
  namespace fs = std::filesystem;
  const fs::path where(target);
  std::error_code ec;
  fs::create_directories(where.parent_path(), ec);
  if (ec) {
    return fail(Code::kIoError,
                fmt::format("cannot create {}: {}", where.parent_path().string(), ec.message()));
  }
  const std::string path = (where.parent_path() / ("." + where.filename().string() +
                                                   ".gpuq-partial-" + random_token()))
                               .string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return errno_error("create " + path);
  if (::ftruncate(fd, size) != 0) {
    auto error = errno_error("size " + path).value();
    ::close(fd);
    ::unlink(path.c_str());
    return tl::unexpected(std::move(error));
  }
  return PartialFile(target, path, fd);
}

PartialFile::PartialFile(PartialFile&& other) noexcept
    : target_(std::move(other.target_)), path_(std::move(other.path_)), fd_(other.fd_) {
  other.fd_ = -1;
}

PartialFile::~PartialFile() {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(path_.c_str());
}

Status PartialFile::commit() {
  if (::fsync(fd_) != 0) return errno_error("fsync " + path_);
  if (::rename(path_.c_str(), target_.c_str()) != 0) {
    return errno_error(fmt::format("rename {} to {}", path_, target_));
  }
  ::close(fd_);
  fd_ = -1;
  const std::string folder = std::filesystem::path(target_).parent_path().string();
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return ok();
}

Result<Md5Digest> md5_of_range(int fd, int64_t offset, int64_t length, const std::string& path) {
  auto md5 = Md5::start();
  if (!md5) return tl::unexpected(md5.error());
  std::vector<char> buffer(1 << 20);
  int64_t done = 0;
  while (done < length) {
    const size_t want = static_cast<size_t>(std::min<int64_t>(length - done, buffer.size()));
    const ssize_t got = ::pread(fd, buffer.data(), want, offset + done);
    if (got < 0) return errno_error("read " + path);
    if (got == 0) {
      return fail(Code::kIoError, fmt::format("{} ended at byte {} while {} were expected", path,
                                              offset + done, offset + length));
    }
    md5->update(buffer.data(), static_cast<size_t>(got));
    done += got;
  }
  return md5->digest();
}

}  // namespace gpuq::fleet
