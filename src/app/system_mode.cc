// SPDX-License-Identifier: Apache-2.0
// A system daemon's set-up: see system_mode.h.
#include "app/system_mode.h"

#include <fmt/format.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "os/process.h"

namespace gpuq::app {
namespace {

constexpr mode_t kPassThrough = 0711;

Status set_mode(const std::string& path, mode_t mode) {
  if (::chmod(path.c_str(), mode) != 0) {
    return fail(Code::kIoError, fmt::format("chmod {:o} {}: {}", mode, path, std::strerror(errno)));
  }
  return ok();
}

// Whether something accepts connections on the unix socket at `path`.
bool answers(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  bool connected = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return connected;
}

}  // namespace

Status check_system_user() {
  if (::geteuid() == 0) return ok();
  return fail(Code::kFailedPrecondition,
              "--system starts each job as the user who submitted it, which needs root: start it "
              "with sudo, or as the system service (sudo systemctl enable --now gpuq; docs/lab.md). "
              "Without --system, gpuq daemon serves you alone");
}

Status open_home_to_users(const HomeLayout& layout) {
  if (auto st = set_mode(layout.home, kPassThrough); !st) return st;
  if (auto st = os::make_dirs(layout.jobs_dir(), kPassThrough); !st) return st;
  return set_mode(layout.jobs_dir(), kPassThrough);
}

Result<SystemSocket> prepare_system_socket(const std::string& path, const std::string& group) {
  std::string buf(16 << 10, '\0');
  struct group entry {};
  struct group* found = nullptr;
  if (::getgrnam_r(group.c_str(), &entry, buf.data(), buf.size(), &found) != 0 || found == nullptr) {
    return fail(Code::kFailedPrecondition,
                fmt::format("the group '{}' ([users] group) does not exist: create it (sudo groupadd "
                            "{}; the .deb does) and add the box's users to it (sudo adduser LOGIN "
                            "{}), or name another group in config.toml",
                            group, group, group));
  }
  std::string dir = path.substr(0, path.rfind('/'));
  struct stat info {};
  if (!dir.empty() && ::stat(dir.c_str(), &info) != 0) {
    // Made here (the service's /run/gpuq): root's, and open for members to reach the socket.
    if (auto st = os::make_dirs(dir, 0755); !st) return tl::unexpected(st.error());
    if (auto st = set_mode(dir, 0755); !st) return tl::unexpected(st.error());
  }
  if (answers(path)) {
    return fail(Code::kFailedPrecondition,
                fmt::format("a daemon already serves {}: stop it first (sudo systemctl stop gpuq), or "
                            "give this one another socket with GPUQ_SYSTEM_SOCKET",
                            path));
  }
  return SystemSocket{path, found->gr_gid};
}

}  // namespace gpuq::app
