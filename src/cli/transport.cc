// SPDX-License-Identifier: Apache-2.0
#include "cli/transport.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include "os/command.h"

namespace gpuq::cli {
namespace {

// "alice (uid 1000)", or "uid 1000" for a uid without a name. The name comes from `getent
// passwd UID`, glibc's own NSS front end, not from getpwuid: the light client is linked
// statically, and a static getpwuid that meets an NSS module (sss, ldap, systemd) loads it with
// a libc of its own and crashes (seen for a uid not in /etc/passwd under "passwd: files
// systemd"). Only an error message needs the name, so the process it costs does not matter.
std::string user_label(uid_t uid) {
  std::string name;
  if (auto entry = os::run_command({"getent", "passwd", std::to_string(uid)}, Millis(5'000));
      entry && entry->exit_code == 0) {
    name = entry->out.substr(0, entry->out.find(':'));
  }
  if (name.empty() || name.find_first_of("\n\r") != std::string::npos) return fmt::format("uid {}", uid);
  return fmt::format("{} (uid {})", name, uid);
}

}  // namespace

Status check_daemon_socket(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      return fail(Code::kUnavailable, "no socket at " + path);
    return fail(Code::kIoError, fmt::format("cannot use {}: {}", path, std::strerror(errno)));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return fail(Code::kUnavailable, fmt::format("{} exists but is not a socket", path));
  }
  return check_socket_owner(path, st.st_uid, ::geteuid());
}

Result<DaemonUrl> parse_daemon_url(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return fail(Code::kInvalidArgument,
                fmt::format("bad --url '{}': {}; write http://HOST:PORT, the address `gpuq "
                            "dashboard` shows",
                            clip_for_message(text), why));
  };
  constexpr std::string_view kScheme = "http://";
  if (!text.starts_with(kScheme)) {
    return bad(text.starts_with("https://") ? "the daemon serves plain http (use an ssh tunnel to reach another machine)"
                                            : "it must start with http://");
  }
  std::string_view rest = text.substr(kScheme.size());
  if (rest.ends_with("/")) rest.remove_suffix(1);
  if (rest.empty()) return bad("no host");
  for (char c : rest) {
    if (c == '/' || c == '?' || c == '#' || c == '@' || std::isspace(static_cast<unsigned char>(c))) {
      return bad("give only the host and port, no path");
    }
  }
  return DaemonUrl{std::string(kScheme) + std::string(rest), std::string(rest)};
}

Status check_socket_owner(const std::string& path, uid_t owner, uid_t cli_uid) {
  if (owner == cli_uid || owner == 0 || cli_uid == 0) return ok();
  return fail(Code::kFailedPrecondition,
              fmt::format("refusing the socket {}: it belongs to {}, not to you ({}), so a "
                          "daemon of that user, or whatever put the socket there, would receive "
                          "what gpuq sends (your jobs' environments included). Use your own "
                          "daemon's home (--home DIR or $GPUQ_HOME); if this socket should be "
                          "yours, remove it and start your daemon: gpuq daemon --detach",
                          path, user_label(owner), user_label(cli_uid)));
}

std::string HttpResponse::header(std::string_view name) const {
  std::string key(name);
  for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto it = headers.find(key);
  return it == headers.end() ? std::string() : it->second;
}

}  // namespace gpuq::cli
