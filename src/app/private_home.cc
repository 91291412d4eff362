// SPDX-License-Identifier: Apache-2.0
#include "app/private_home.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "daemon/config.h"
#include "os/process_table.h"

namespace gpuq::app {
namespace {

constexpr mode_t kOthersWrite = S_IWGRP | S_IWOTH;
constexpr mode_t kOthersAny = S_IRWXG | S_IRWXO;

std::string octal(mode_t mode) { return fmt::format("{:04o}", mode & 07777); }

std::string who(uid_t uid) {
  std::string name = os::user_name(uid);
  return name == std::to_string(uid) ? fmt::format("uid {}", uid) : fmt::format("{} (uid {})", name, uid);
}

}  // namespace

Result<std::vector<std::string>> make_home_private(const std::string& home, uid_t uid, bool pass_through) {
  struct stat st {};
  if (::stat(home.c_str(), &st) != 0) return errno_error("cannot use the state directory " + home);
  auto refuse = [](std::string message) { return fail(Code::kFailedPrecondition, std::move(message)); };
  if (!S_ISDIR(st.st_mode)) {
    return refuse(fmt::format("the state directory {} is not a directory; give another one "
                              "(--home DIR or $GPUQ_HOME)",
                              home));
  }
  if (st.st_uid != uid) {
    return refuse(fmt::format(
        "the state directory {} belongs to {}, not to {} who runs this daemon: its owner could "
        "change what the daemon reads and runs. Use a directory of your own (--home DIR or "
        "$GPUQ_HOME), or, if this one is meant to be yours: chown {} {} && chmod 700 {}",
        home, who(st.st_uid), who(uid), os::user_name(uid), home, home));
  }
  if ((st.st_mode & kOthersWrite) != 0) {
    return refuse(fmt::format(
        "the state directory {} can be written by other users (mode {}): they could replace its "
        "database, its socket or the job scripts in it. Make it private: chmod 700 {}",
        home, octal(st.st_mode), home));
  }
  std::vector<std::string> warnings;
  // A system daemon's home lets its users pass through (0711) to their own job directories.
  const mode_t others_allowed = pass_through ? (S_IXGRP | S_IXOTH) : 0;
  if ((st.st_mode & kOthersAny & ~others_allowed) != 0) {
    mode_t tightened = st.st_mode & ~(kOthersAny & ~others_allowed) & 07777;
    if (::chmod(home.c_str(), tightened) != 0) {
      return errno_error(fmt::format("chmod {} {} (it is readable by other users, mode {})",
                                     octal(tightened), home, octal(st.st_mode)));
    }
    warnings.push_back(fmt::format(
        "warning: the state directory {} was readable by other users (mode {}); made it {}: it "
        "holds the jobs' environments, scripts and logs",
        home, octal(st.st_mode), octal(tightened)));
  }
  return warnings;
}

std::vector<std::string> tighten_state_files(const HomeLayout& layout) {
  std::vector<std::string> warnings;
  std::string database = layout.database();
  for (const std::string& path :
       {database, database + "-wal", database + "-shm", layout.daemon_log(),
        layout.home + "/" + std::string(daemon::kConfigFileName)}) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if ((st.st_mode & kOthersAny) == 0) continue;
    mode_t tightened = st.st_mode & ~kOthersAny & 07777;
    if (::chmod(path.c_str(), tightened) != 0) {
      warnings.push_back(fmt::format("warning: {} is readable by other users (mode {}) and "
                                     "could not be made {}: {}; fix it with chmod 600 {}",
                                     path, octal(st.st_mode), octal(tightened),
                                     std::strerror(errno), path));
      continue;
    }
    warnings.push_back(fmt::format("warning: {} was readable by other users (mode {}); made it {}",
                                   path, octal(st.st_mode), octal(tightened)));
  }
  return warnings;
}

}  // namespace gpuq::app
