// SPDX-License-Identifier: Apache-2.0
#include "base/token_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>

#include "base/random.h"

namespace gpuq {
namespace {

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

// Writes `text` to `path` through path.new and a rename, mode 0600; `what` names the file in
// messages ("the token file ").
Status write_new(const std::string& path, const std::string& text, std::string_view what) {
  std::string temporary = path + ".new";
  ::unlink(temporary.c_str());  // a leftover of a start that died before the rename
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return errno_error("cannot create " + temporary);
  bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  int saved = errno;
  bool synced = written && ::fsync(fd) == 0;
  if (written && !synced) saved = errno;
  ::close(fd);
  if (!synced || ::rename(temporary.c_str(), path.c_str()) != 0) {
    if (synced) saved = errno;
    ::unlink(temporary.c_str());
    return errno_error(fmt::format("cannot write {}{}", what, path), saved);
  }
  return ok();
}

// The first 4 KiB of the file at `path`, less trailing newlines and spaces; `what` as above.
Result<std::string> read_small_file(const std::string& path, std::string_view what) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_error(fmt::format("cannot read {}{}", what, path));
  std::string text;
  char buffer[256];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0 && text.size() < 4096) {
    text.append(buffer, static_cast<size_t>(n));
  }
  int saved = errno;
  ::close(fd);
  if (n < 0) return errno_error(fmt::format("cannot read {}{}", what, path), saved);
  return trimmed(std::move(text));
}

}  // namespace

Result<std::string> random_token() {
  std::array<unsigned char, kTokenHexChars / 2> bits{};
  if (auto st = random_bytes(bits.data(), bits.size()); !st) return tl::unexpected(st.error());
  std::string out;
  for (unsigned char b : bits) out += fmt::format("{:02x}", b);
  return out;
}

bool is_token(std::string_view text) {
  if (text.size() != kTokenHexChars) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Result<std::string> ensure_token_file(const std::string& path, uid_t uid) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return errno_error("cannot use the token file " + path);
    auto token = random_token();
    if (!token) return token;
    if (auto written = write_new(path, *token + "\n", "the token file "); !written) {
      return tl::unexpected(written.error());
    }
    return token;
  }
  auto refuse = [&](std::string_view why, std::string_view fix) {
    return fail(Code::kFailedPrecondition,
                fmt::format("the HTTP token file {} {}: whoever reads it can drive this daemon "
                            "over TCP. {}",
                            path, why, fix));
  };
  std::string remake = fmt::format("Remove it (rm {}) and start the daemon again to make a new "
                                   "token, or start it with --http off",
                                   path);
  if (!S_ISREG(st.st_mode)) return refuse("is not a regular file", remake);
  if (st.st_uid != uid) {
    return refuse(fmt::format("belongs to uid {}, not to uid {} who runs the daemon", st.st_uid, uid),
                  remake);
  }
  if ((st.st_mode & 077) != 0) {
    return refuse(fmt::format("can be read or written by other users (mode {:04o})", st.st_mode & 07777),
                  fmt::format("Make it private: chmod 600 {} (and, if others may have read it, "
                              "remove it and restart the daemon for a new token)",
                              path));
  }
  auto token = read_token_file(path);
  if (!token) {
    if (token.error().code == Code::kFailedPrecondition) return refuse("holds no valid token", remake);
    return token;
  }
  return token;
}

Result<std::string> read_token_file(const std::string& path) {
  auto text = read_small_file(path, "the token file ");
  if (!text && text.error().code == Code::kNotFound) {
    return fail(Code::kNotFound, fmt::format("no token file at {}: the daemon makes it when it "
                                             "starts with HTTP on",
                                             path));
  }
  if (!text) return text;
  if (!is_token(*text)) {
    return fail(Code::kFailedPrecondition,
                fmt::format("the token file {} does not hold a token (64 hex characters)", path));
  }
  return text;
}

Status write_token_listen(const std::string& path, std::string_view listen) {
  return write_new(path, std::string(listen) + "\n", "");
}

Status remove_token_listen(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return errno_error("cannot remove " + path);
  return ok();
}

std::string read_token_listen(const std::string& path) {
  auto text = read_small_file(path, "");
  return text ? *text : std::string();
}

}  // namespace gpuq
