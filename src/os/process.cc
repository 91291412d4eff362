// SPDX-License-Identifier: Apache-2.0
#include "os/process.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

namespace gpuq::os {

Result<uint64_t> process_start_ticks(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  if (!in) return fail(Code::kNotFound, fmt::format("process {} does not exist", pid));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return fail(Code::kCorruption, "unreadable /proc stat");
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  // After ')' comes field 3 (state); start time is field 22.
  for (int i = 3; i <= 22; ++i) {
    if (!(fields >> field)) return fail(Code::kCorruption, "short /proc stat");
  }
  return std::strtoull(field.c_str(), nullptr, 10);
}

bool is_same_process(pid_t pid, uint64_t start_ticks) {
  if (pid <= 0) return false;
  auto ticks = process_start_ticks(pid);
  return ticks && *ticks == start_ticks;
}

Result<int> open_pidfd(pid_t pid) {
  int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return errno_error(fmt::format("pidfd_open({})", pid));
  return fd;
}

Result<int> open_pidfd_checked(pid_t pid, uint64_t start_ticks) {
  if (pid <= 0) return fail(Code::kNotFound, fmt::format("no process {}", pid));
  auto fd = open_pidfd(pid);
  if (!fd) return tl::unexpected(fd.error());  // ESRCH is kNotFound
  auto ticks = process_start_ticks(pid);
  if (!ticks || *ticks != start_ticks) {
    ::close(*fd);
    return fail(Code::kNotFound,
                fmt::format("process {} that started at tick {} is gone", pid, start_ticks));
  }
  return *fd;
}

Status signal_pidfd(int pidfd, int sig) {
  if (syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0) != 0) {
    return errno_error(fmt::format("pidfd_send_signal({})", sig));
  }
  return ok();
}

std::string boot_id() {
  auto text = read_file("/proc/sys/kernel/random/boot_id");
  if (!text) return "";
  while (!text->empty() && (text->back() == '\n' || text->back() == ' ')) text->pop_back();
  return *text;
}

bool process_group_alive(pid_t pgid) {
  if (pgid <= 1) return false;
  return ::kill(-pgid, 0) == 0 || errno == EPERM;
}

namespace {
// Live processes whose stat field `field` (5 = process group, 6 = session) equals `value`.
std::vector<pid_t> processes_with_stat_field(int field, pid_t value) {
  std::vector<pid_t> members;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 2));
    std::string state, word;
    if (!(fields >> state)) continue;
    if (state == "Z") continue;  // already dead, waiting to be reaped
    for (int i = 4; i <= field; ++i) fields >> word;
    if (std::strtol(word.c_str(), nullptr, 10) == value) {
      members.push_back(static_cast<pid_t>(std::strtol(name.c_str(), nullptr, 10)));
    }
  }
  return members;
}
}  // namespace

std::vector<pid_t> processes_in_group(pid_t pgid) { return processes_with_stat_field(5, pgid); }

std::vector<pid_t> processes_in_session(pid_t sid) { return processes_with_stat_field(6, sid); }

Status write_file_atomic_at(int dir_fd, const std::string& name, const std::string& content, bool durable) {
  std::string tmp = name + ".tmp";
  // A fresh file, never one found there: the directory may be writable by someone else (a run
  // directory of the job's user), who could leave a link to a file of the caller's.
  if (::unlinkat(dir_fd, tmp.c_str(), 0) != 0 && errno != ENOENT) return errno_error("unlink " + tmp);
  int fd = ::openat(dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return errno_error("open " + tmp);
  // A failed write (a full disk) must not leave a partial temporary file holding space.
  auto give_up = [&](std::string_view what) {
    int err = errno;
    ::close(fd);
    ::unlinkat(dir_fd, tmp.c_str(), 0);
    return errno_error(std::string(what) + " " + tmp, err);
  };
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return give_up("write");
    done += static_cast<size_t>(n);
  }
  if (durable && ::fsync(fd) != 0) return give_up("fsync");
  if (::close(fd) != 0) {
    int err = errno;
    ::unlinkat(dir_fd, tmp.c_str(), 0);
    return errno_error("close " + tmp, err);
  }
  if (::renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) != 0) {
    int err = errno;
    ::unlinkat(dir_fd, tmp.c_str(), 0);
    return errno_error("rename to " + name, err);
  }
  if (durable) ::fsync(dir_fd);
  return ok();
}

Status write_file_atomic(const std::string& path, const std::string& content, bool durable) {
  auto slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return errno_error("open " + dir);
  auto written = write_file_atomic_at(dir_fd, name, content, durable);
  ::close(dir_fd);
  if (!written) return fail(written.error().code, written.error().message + " in " + dir);
  return ok();
}

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return errno_error("open " + path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

Status make_dirs(const std::string& path, mode_t mode) {
  std::error_code ec;
  // Most calls find the parent there (a run directory in its job's): one mkdir, not a stat of
  // every component.
  if (::mkdir(path.c_str(), mode) == 0) return ok();
  if (errno == EEXIST && std::filesystem::is_directory(path, ec)) return ok();
  std::filesystem::path p(path);
  std::filesystem::path built;
  for (const auto& part : p) {
    built /= part;
    if (built.string() == "/" || std::filesystem::is_directory(built, ec)) continue;
    if (::mkdir(built.c_str(), mode) != 0 && errno != EEXIST) {
      return errno_error("mkdir " + built.string());
    }
  }
  return ok();
}

Result<std::string> self_executable() {
  std::error_code ec;
  auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return fail(Code::kIoError, "cannot read /proc/self/exe: " + ec.message());
  return path.string();
}

}  // namespace gpuq::os
