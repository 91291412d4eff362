// SPDX-License-Identifier: Apache-2.0
// The page that opens the dashboard: see dashboard_page.h.
#include "cli/dashboard_page.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace gpuq::cli {
namespace {

std::string escaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string environment(const std::vector<std::string>& environ, std::string_view name) {
  for (const std::string& entry : environ) {
    if (entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=') {
      return entry.substr(name.size() + 1);
    }
  }
  return "";
}

// `dir`, made 0700 when missing; refused when it is not a directory of this user's that
// nobody else may write (another user could swap the page for one of theirs).
Status private_directory(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return errno_error(fmt::format("cannot make the directory {}", dir));
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return errno_error(fmt::format("cannot read {}", dir));
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) {
    return fail(Code::kFailedPrecondition,
                fmt::format("{} is not a directory of yours that only you may write: remove it, or "
                            "open the link printed above yourself",
                            dir));
  }
  return ok();
}

}  // namespace

std::string file_url(std::string_view path) {
  std::string out = "file://";
  for (char c : path) {
    auto byte = static_cast<unsigned char>(c);
    bool plain = (byte >= 'a' && byte <= 'z') || (byte >= 'A' && byte <= 'Z') || (byte >= '0' && byte <= '9') ||
                 c == '/' || c == '-' || c == '.' || c == '_' || c == '~';
    out += plain ? std::string(1, c) : fmt::format("%{:02X}", byte);
  }
  return out;
}

std::string dashboard_redirect_html(std::string_view url) {
  std::string href = escaped(url);
  return fmt::format(
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
      "<meta name=\"referrer\" content=\"no-referrer\">\n"
      "<meta http-equiv=\"refresh\" content=\"0;url={0}\">\n<title>gpuq dashboard</title></head>\n"
      "<body><p>Opening the <a href=\"{0}\">gpuq dashboard</a>…</p></body></html>\n",
      href);
}

Result<std::string> write_dashboard_redirect(const std::vector<std::string>& environ, std::string_view listen,
                                             std::string_view url) {
  std::string dir;
  if (std::string runtime = environment(environ, "XDG_RUNTIME_DIR"); runtime.starts_with("/")) {
    dir = runtime + "/gpuq";
  } else if (std::string home = environment(environ, "HOME"); home.starts_with("/")) {
    ::mkdir((home + "/.cache").c_str(), 0700);  // when missing; gpuq's own below is checked
    dir = home + "/.cache/gpuq";
  } else {
    return fail(Code::kFailedPrecondition,
                "neither $XDG_RUNTIME_DIR nor $HOME names a directory for the page that opens the "
                "dashboard: open the link printed above yourself");
  }
  if (auto made = private_directory(dir); !made) return tl::unexpected(made.error());
  std::string_view port = listen.substr(listen.rfind(':') + 1);
  if (port.empty() || port.find_first_not_of("0123456789") != std::string_view::npos) port = "http";
  std::string path = fmt::format("{}/dashboard-{}.html", dir, port);
  std::string temporary = path + ".new";
  ::unlink(temporary.c_str());
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return errno_error(fmt::format("cannot write {}", temporary));
  std::string html = dashboard_redirect_html(url);
  bool written = ::write(fd, html.data(), html.size()) == static_cast<ssize_t>(html.size());
  int saved_errno = errno;
  ::close(fd);
  if (!written || ::rename(temporary.c_str(), path.c_str()) != 0) {
    if (written) saved_errno = errno;
    ::unlink(temporary.c_str());
    errno = saved_errno;
    return errno_error(fmt::format("cannot write {}", path));
  }
  return path;
}

}  // namespace gpuq::cli
