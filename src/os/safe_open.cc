// SPDX-License-Identifier: Apache-2.0
#include "os/safe_open.h"

#include <cerrno>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <utility>
#include <vector>

#include <fmt/format.h>

#include "os/unique_fd.h"

namespace gpuq::os {
namespace {


Result<std::vector<std::string>> components_of(const std::string& relative) {
  if (relative.empty() || relative.front() == '/') {
    return fail(Code::kInvalidArgument, fmt::format("'{}' is not a path relative to a directory", relative));
  }
  std::vector<std::string> parts;
  size_t begin = 0;
  while (begin <= relative.size()) {
    size_t end = relative.find('/', begin);
    if (end == std::string::npos) end = relative.size();
    std::string part = relative.substr(begin, end - begin);
    if (part == "..") return fail(Code::kInvalidArgument, fmt::format("'{}' leaves its directory", relative));
    if (!part.empty() && part != ".") parts.push_back(std::move(part));
    begin = end + 1;
  }
  if (parts.empty()) return fail(Code::kInvalidArgument, fmt::format("'{}' names no file", relative));
  return parts;
}

tl::unexpected<Error> refusal(const std::string& relative, int err) {
  if (err == EEXIST) return fail(Code::kConflict, fmt::format("{} exists already", relative));
  if (err == ELOOP || err == EXDEV) {
    return fail(Code::kPermissionDenied,
                fmt::format("{}: a symbolic link on the way (not followed)", relative));
  }
  return errno_error("open " + relative, err);
}

// openat2: -1 with errno ENOSYS on a kernel without it.
int open_by_kernel(int dir_fd, const std::string& relative, int flags, mode_t mode) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags);
  how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  long fd;
  do {
    fd = ::syscall(SYS_openat2, dir_fd, relative.c_str(), &how, sizeof how);
  } while (fd < 0 && (errno == EINTR || errno == EAGAIN));
  return static_cast<int>(fd);
}

int open_by_walk(int dir_fd, const std::vector<std::string>& parts, int flags, mode_t mode) {
  int current = dir_fd;
  std::vector<UniqueFd> walked;  // each directory on the way, held open until the file is
  walked.reserve(parts.size());
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    int next = ::openat(current, parts[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) {
      // O_PATH|O_NOFOLLOW on a link opens the link, which O_DIRECTORY then refuses: say ELOOP.
      int err = errno;
      struct stat st{};
      if (err == ENOTDIR && ::fstatat(current, parts[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISLNK(st.st_mode)) {
        err = ELOOP;
      }
      errno = err;
      return -1;
    }
    walked.emplace_back(next);
    current = next;
  }
  return ::openat(current, parts.back().c_str(), flags, mode);
}

}  // namespace

Result<int> open_beneath_at(int dir_fd, const std::string& relative, int flags, mode_t mode,
                            const BeneathOptions& options) {
  auto parts = components_of(relative);
  if (!parts) return tl::unexpected(parts.error());
  flags |= O_NOFOLLOW | O_CLOEXEC;
  if (options.regular_file) flags |= O_NONBLOCK;
  int fd = -1;
  if (options.resolve == BeneathOptions::Resolve::kKernel) {
    fd = open_by_kernel(dir_fd, relative, flags, mode);
    if (fd < 0 && errno == ENOSYS) fd = open_by_walk(dir_fd, *parts, flags, mode);
  } else {
    fd = open_by_walk(dir_fd, *parts, flags, mode);
  }
  if (fd < 0) return refusal(relative, errno);
  UniqueFd opened(fd);
  if (options.regular_file || options.owner) {
    struct stat st{};
    if (::fstat(fd, &st) != 0) return errno_error("fstat " + relative);
    if (options.regular_file && !S_ISREG(st.st_mode)) {
      return fail(Code::kPermissionDenied, fmt::format("{}: not a regular file", relative));
    }
    if (options.owner && st.st_uid != *options.owner) {
      return fail(Code::kPermissionDenied,
                  fmt::format("{}: owned by uid {}, not {}", relative, st.st_uid, *options.owner));
    }
  }
  return opened.release();
}

Result<int> open_beneath(const std::string& trusted_dir, const std::string& relative, int flags,
                         mode_t mode, const BeneathOptions& options) {
  UniqueFd dir(::open(trusted_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) return errno_error("open " + trusted_dir);
  return open_beneath_at(dir.get(), relative, flags, mode, options);
}

Result<std::string> read_open_file(int fd, size_t max_bytes, const std::string& name) {
  std::string text;
  char buffer[8192];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_error("read " + name);
    if (n == 0) return text;
    if (text.size() + static_cast<size_t>(n) > max_bytes) {
      return fail(Code::kCorruption, fmt::format("{}: larger than {} bytes", name, max_bytes));
    }
    text.append(buffer, static_cast<size_t>(n));
  }
}

Result<std::string> read_file_beneath(const std::string& trusted_dir, const std::string& relative,
                                      size_t max_bytes, std::optional<uid_t> owner) {
  BeneathOptions options;
  options.regular_file = true;
  options.owner = owner;
  auto fd = open_beneath(trusted_dir, relative, O_RDONLY, 0, options);
  if (!fd) return tl::unexpected(fd.error());
  UniqueFd file(*fd);
  return read_open_file(file.get(), max_bytes, trusted_dir + "/" + relative);
}

std::pair<std::string, std::string> split_trusted(const std::string& path, int levels) {
  size_t cut = path.size();
  for (int i = 0; i < levels; ++i) {
    size_t slash = cut == 0 ? std::string::npos : path.rfind('/', cut - 1);
    if (slash == std::string::npos) return {".", path};
    cut = slash;
  }
  if (cut == 0) return {"/", path.substr(1)};
  return {path.substr(0, cut), path.substr(cut + 1)};
}

}  // namespace gpuq::os
