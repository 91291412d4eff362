// SPDX-License-Identifier: Apache-2.0
#include "os/process_table.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "os/unique_fd.h"

namespace gpuq::os {
namespace {


// Reads the whole of an open file (up to `cap` bytes) into `out`. False on a read error.
bool read_all(int fd, std::string& out, size_t cap) {
  out.clear();
  char buf[4096];
  while (out.size() < cap) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  if (out.size() > cap) out.resize(cap);
  return true;
}

// One read of a /proc file the kernel renders at once (well under `size` bytes): its text, or
// nullopt when it could not be read or was empty.
std::optional<std::string> read_rendered(int fd, size_t size) {
  std::string text(size, '\0');
  ssize_t n;
  do {
    n = ::read(fd, text.data(), size);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return std::nullopt;
  text.resize(static_cast<size_t>(n));
  return text;
}

std::string proc_path(pid_t pid, const char* file) { return fmt::format("/proc/{}/{}", pid, file); }

// Parses /proc/PID/stat: "pid (comm) S ppid ... starttime(22) ...". The command name may hold
// spaces and parentheses, so fields resume after the last ')'.
bool parse_stat(const std::string& stat, ProcessFacts& facts, std::string* comm) {
  size_t open = stat.find('(');
  size_t close = stat.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open ||
      close + 2 > stat.size()) {
    return false;
  }
  if (comm != nullptr) *comm = stat.substr(open + 1, close - open - 1);
  const char* p = stat.c_str() + close + 2;
  char state = *p;
  facts.zombie = state == 'Z' || state == 'X' || state == 'x';
  // Field 3 is the state; walk to field 4 (ppid), 6 (session) and 22 (starttime).
  for (int field = 3; field < 22; ++field) {
    p = std::strchr(p, ' ');
    if (p == nullptr) return false;
    ++p;
    if (field + 1 == 4) facts.ppid = static_cast<pid_t>(std::strtol(p, nullptr, 10));
    if (field + 1 == 6) facts.session = static_cast<pid_t>(std::strtol(p, nullptr, 10));
  }
  facts.start_ticks = std::strtoull(p, nullptr, 10);
  return true;
}

class LinuxProcessTable : public ProcessTable {
 public:
  std::vector<pid_t> pids() override {
    std::vector<pid_t> out;
    DIR* dir = ::opendir("/proc");
    if (dir == nullptr) return out;
    while (dirent* entry = ::readdir(dir)) {
      const char* name = entry->d_name;
      if (name[0] < '1' || name[0] > '9') continue;
      char* end = nullptr;
      long pid = std::strtol(name, &end, 10);
      if (*end == '\0') out.push_back(static_cast<pid_t>(pid));
    }
    ::closedir(dir);
    return out;
  }

  std::optional<ProcessFacts> facts(pid_t pid) override { return read_facts(pid, nullptr); }

  std::optional<pid_t> last_pid() override {
    UniqueFd fd(::open("/proc/sys/kernel/ns_last_pid", O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return std::nullopt;
    auto text = read_rendered(fd.get(), 32);
    if (!text) return std::nullopt;
    char* end = nullptr;
    long pid = std::strtol(text->c_str(), &end, 10);
    if (end == text->c_str() || pid <= 0) return std::nullopt;
    return static_cast<pid_t>(pid);
  }

  std::optional<std::string> env_value(pid_t pid, std::string_view name) override {
    UniqueFd fd(::open(proc_path(pid, "environ").c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return std::nullopt;
    std::string env;
    // ARG_MAX-sized environments exist; a marker past 8 MiB is not worth reading for.
    if (!read_all(fd.get(), env, 8u << 20)) return std::nullopt;
    size_t pos = 0;
    while (pos < env.size()) {
      size_t end = env.find('\0', pos);
      if (end == std::string::npos) end = env.size();
      std::string_view entry(env.data() + pos, end - pos);
      if (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 &&
          entry[name.size()] == '=') {
        return std::string(entry.substr(name.size() + 1));
      }
      pos = end + 1;
    }
    return std::nullopt;
  }

  std::string cmdline(pid_t pid) override {
    std::string text;
    {
      UniqueFd fd(::open(proc_path(pid, "cmdline").c_str(), O_RDONLY | O_CLOEXEC));
      if (fd.get() >= 0) read_all(fd.get(), text, 4096);
    }
    while (!text.empty() && text.back() == '\0') text.pop_back();
    for (char& c : text) {
      if (c == '\0') c = ' ';
    }
    if (!text.empty()) return text;
    std::string comm;
    if (!read_facts(pid, &comm)) return "";
    return "[" + comm + "]";
  }

  SignalResult signal(pid_t pid, uint64_t start_ticks, int sig) override {
    if (pid <= 0) return SignalResult::kGone;
    // The pidfd pins the process that has the pid now; if that one started at start_ticks,
    // the signal can only reach it, even if it exits and the pid is reused meanwhile.
    int raw = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (raw < 0 && errno != ENOSYS) return SignalResult::kGone;
    UniqueFd pidfd(raw);
    auto now = read_facts(pid, nullptr);
    if (!now || now->zombie || now->start_ticks != start_ticks) return SignalResult::kGone;
    int rc = pidfd.get() >= 0
                 ? static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd.get(), sig, nullptr, 0))
                 : ::kill(pid, sig);  // kernels before 5.3: checked just above, small window
    if (rc == 0) return SignalResult::kSent;
    return errno == EPERM ? SignalResult::kDenied : SignalResult::kGone;
  }

 private:
  static std::optional<ProcessFacts> read_facts(pid_t pid, std::string* comm) {
    UniqueFd fd(::open(proc_path(pid, "stat").c_str(), O_RDONLY | O_CLOEXEC));
    struct stat st {};
    if (fd.get() < 0 && errno == EACCES) {
      // /proc mounted with hidepid=1: another user's process shows its owner and nothing else.
      // Start ticks 0 make it older than every run; ppid 0 ends an ancestry walk.
      if (::stat(fmt::format("/proc/{}", pid).c_str(), &st) != 0) return std::nullopt;
      return ProcessFacts{pid, 0, 0, st.st_uid, false};
    }
    if (fd.get() < 0) return std::nullopt;
    if (::fstat(fd.get(), &st) != 0) return std::nullopt;
    // One read: the kernel renders the whole line (well under 1 KiB) at once.
    auto text = read_rendered(fd.get(), 2048);
    if (!text) return std::nullopt;
    ProcessFacts facts;
    facts.pid = pid;
    facts.uid = st.st_uid;
    if (!parse_stat(*text, facts, comm)) return std::nullopt;
    return facts;
  }
};

}  // namespace

std::unique_ptr<ProcessTable> make_linux_process_table() {
  return std::make_unique<LinuxProcessTable>();
}

std::string user_name(uid_t uid) {
  long hint = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::string buf(hint > 0 ? static_cast<size_t>(hint) : 4096, '\0');
  while (true) {
    passwd pw{};
    passwd* found = nullptr;
    int rc = ::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found);
    if (rc == ERANGE && buf.size() < (1u << 20)) {
      buf.resize(buf.size() * 2);
      continue;
    }
    if (rc == 0 && found != nullptr && found->pw_name != nullptr && found->pw_name[0] != '\0') {
      return found->pw_name;
    }
    return std::to_string(uid);
  }
}

// ---- FakeProcessTable ----

void FakeProcessTable::add(Process process) {
  pid_t pid = process.facts.pid;
  processes_[pid] = std::move(process);
}

void FakeProcessTable::add(pid_t pid, pid_t ppid, uint64_t start_ticks, uid_t uid,
                           std::string run_id, std::string cmdline) {
  Process p;
  p.facts = ProcessFacts{pid, ppid, start_ticks, uid, false};
  if (!run_id.empty()) p.env["GPUQ_RUN_ID"] = std::move(run_id);
  p.env["PATH"] = "/usr/bin:/bin";
  p.cmdline = cmdline.empty() ? fmt::format("proc-{}", pid) : std::move(cmdline);
  add(std::move(p));
}

void FakeProcessTable::remove(pid_t pid) { processes_.erase(pid); }

FakeProcessTable::Process* FakeProcessTable::find(pid_t pid) {
  auto it = processes_.find(pid);
  return it == processes_.end() ? nullptr : &it->second;
}

std::vector<int> FakeProcessTable::signals_to(pid_t pid) const {
  std::vector<int> out;
  for (const auto& s : sent_) {
    if (s.pid == pid) out.push_back(s.sig);
  }
  return out;
}

int FakeProcessTable::env_reads(pid_t pid) const {
  auto it = env_reads_.find(pid);
  return it == env_reads_.end() ? 0 : it->second;
}

int FakeProcessTable::facts_reads(pid_t pid) const {
  auto it = facts_reads_.find(pid);
  return it == facts_reads_.end() ? 0 : it->second;
}

std::vector<pid_t> FakeProcessTable::pids() {
  ++scans_;
  std::vector<pid_t> out;
  for (const auto& [pid, p] : processes_) out.push_back(pid);
  return out;
}

std::optional<ProcessFacts> FakeProcessTable::facts(pid_t pid) {
  if (on_facts) on_facts(pid);
  ++facts_reads_[pid];
  auto it = processes_.find(pid);
  if (it == processes_.end()) return std::nullopt;
  return it->second.facts;
}

std::optional<std::string> FakeProcessTable::env_value(pid_t pid, std::string_view name) {
  if (on_env) on_env(pid);
  ++env_reads_[pid];
  auto it = processes_.find(pid);
  if (it == processes_.end() || it->second.env_unreadable) return std::nullopt;
  auto var = it->second.env.find(name);
  if (var == it->second.env.end()) return std::nullopt;
  return var->second;
}

std::string FakeProcessTable::cmdline(pid_t pid) {
  auto it = processes_.find(pid);
  return it == processes_.end() ? "" : it->second.cmdline;
}

SignalResult FakeProcessTable::signal(pid_t pid, uint64_t start_ticks, int sig) {
  if (on_signal) on_signal(pid);
  auto it = processes_.find(pid);
  if (it == processes_.end() || it->second.facts.zombie ||
      it->second.facts.start_ticks != start_ticks) {
    return SignalResult::kGone;
  }
  Process& p = it->second;
  if (p.deny_signals) return SignalResult::kDenied;
  sent_.push_back(Sent{pid, start_ticks, sig});
  bool ends = !p.unkillable && (sig == SIGKILL || (sig == SIGTERM && !p.ignores_term) ||
                                sig == SIGINT || sig == SIGHUP || sig == SIGQUIT);
  if (ends) processes_.erase(it);
  return SignalResult::kSent;
}

}  // namespace gpuq::os
