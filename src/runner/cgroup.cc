// SPDX-License-Identifier: Apache-2.0
#include "runner/cgroup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>

#include "os/process.h"

namespace gpuq::runner {
namespace {

class RealCgroupFiles : public CgroupFiles {
 public:
  Result<std::string> read(const std::string& path) override { return os::read_file(path); }

  Status write(const std::string& path, const std::string& text) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return errno_error("open " + path);
    ssize_t n;
    do {
      n = ::write(fd, text.data(), text.size());
    } while (n < 0 && errno == EINTR);
    int err = errno;
    ::close(fd);
    if (n != static_cast<ssize_t>(text.size())) return errno_error("write " + path, err);
    return ok();
  }

  Status make_group(const std::string& path) override {
    if (::mkdir(path.c_str(), 0755) == 0) return ok();
    if (errno == EEXIST) return fail(Code::kConflict, path + " exists already");
    return errno_error("mkdir " + path);
  }

  Status remove_group(const std::string& path) override {
    if (::rmdir(path.c_str()) == 0) return ok();
    return errno_error("rmdir " + path);
  }

  bool exists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }
};

bool is_conflict(const Status& st) { return !st && st.error().code == Code::kConflict; }

}  // namespace

std::unique_ptr<CgroupFiles> make_real_cgroup_files() { return std::make_unique<RealCgroupFiles>(); }

std::optional<bool> parse_populated(const std::string& events) {
  auto value = parse_flat_key(events, "populated");
  if (!value) return std::nullopt;
  return *value != 0;
}

std::optional<int64_t> parse_flat_key(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string name;
  std::string value;
  while (in >> name >> value) {
    if (name != key) continue;
    try {
      return std::stoll(value);
    } catch (...) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

Status RunCgroups::prepare(bool controllers) {
  for (const std::string& dir : {runs_dir(), users_dir()}) {
    if (auto made = files_.make_group(dir); !made && !is_conflict(made)) return made;
  }
  if (!controllers) return ok();
  auto offered = files_.read(root_ + "/cgroup.controllers");
  std::vector<std::string> wanted;
  for (const char* controller : {"cpu", "memory"}) {
    std::istringstream in(offered ? *offered : "");
    for (std::string word; in >> word;) {
      if (word == controller) wanted.push_back(word);
    }
  }
  if (wanted.empty()) return ok();
  // The no-internal-process rule: move root's processes into a leaf before enabling.
  auto procs = files_.read(root_ + "/cgroup.procs");
  if (procs && !procs->empty()) {
    std::string leaf = root_ + "/daemon";
    if (auto made = files_.make_group(leaf); !made && !is_conflict(made)) return made;
    std::istringstream in(*procs);
    for (std::string pid; in >> pid;) {
      // A process that ended meanwhile cannot move (ESRCH); the others must.
      if (auto moved = files_.write(leaf + "/cgroup.procs", pid); !moved && files_.exists("/proc/" + pid)) {
        return moved;
      }
    }
  }
  for (const std::string& controller : wanted) {
    // Best effort: without the memory controller runs simply have no peak memory.
    if (files_.write(root_ + "/cgroup.subtree_control", "+" + controller)) {
      (void)files_.write(runs_dir() + "/cgroup.subtree_control", "+" + controller);
      (void)files_.write(users_dir() + "/cgroup.subtree_control", "+" + controller);
    }
  }
  return ok();
}

Status RunCgroups::place(const std::string& run_id, pid_t pid, const std::string& login) {
  if (!login.empty()) {
    std::string parent = parent_of(login);
    auto made = files_.make_group(parent);
    if (!made && !is_conflict(made)) return made;
    if (made) {
      // The user's runs get what the users' parent offers (best effort, as in prepare()).
      std::istringstream offered(files_.read(parent + "/cgroup.controllers").value_or(""));
      for (std::string controller; offered >> controller;) {
        if (controller == "cpu" || controller == "memory") {
          (void)files_.write(parent + "/cgroup.subtree_control", "+" + controller);
        }
      }
    }
  }
  std::string group = group_of(run_id, login);
  if (auto made = files_.make_group(group); !made && !is_conflict(made)) return made;
  auto moved = files_.write(group + "/cgroup.procs", std::to_string(pid));
  if (!moved) (void)files_.remove_group(group);
  return moved;
}

std::optional<std::string> RunCgroups::existing_group(const std::string& run_id, const std::string& login) {
  for (const std::string& group : {group_of(run_id, login), group_of(run_id)}) {
    if (files_.exists(group)) return group;
  }
  return std::nullopt;
}

RunUsage read_run_usage(CgroupFiles& files, const std::string& group) {
  RunUsage usage;
  if (auto cpu = files.read(group + "/cpu.stat")) usage.cpu_usec = parse_flat_key(*cpu, "usage_usec");
  for (const char* name : {"memory.peak", "memory.max_usage_in_bytes"}) {
    auto text = files.read(group + "/" + name);
    if (!text) continue;
    try {
      usage.peak_bytes = std::stoll(*text);
      break;
    } catch (...) {
      continue;
    }
  }
  return usage;
}

std::optional<std::string> own_cgroup_dir(const std::string& mountinfo, const std::string& self_cgroup) {
  std::string mount;
  std::istringstream lines(mountinfo);
  for (std::string line; std::getline(lines, line);) {
    auto dash = line.find(" - ");
    if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
    std::istringstream fields(line.substr(0, dash));
    std::string id, parent, dev, root, point;
    if (fields >> id >> parent >> dev >> root >> point && root == "/") {
      mount = point;
      break;
    }
  }
  if (mount.empty()) return std::nullopt;
  std::istringstream cgroups(self_cgroup);
  for (std::string line; std::getline(cgroups, line);) {
    if (line.rfind("0::", 0) != 0) continue;
    std::string path = line.substr(3);
    return path == "/" ? mount : mount + path;
  }
  return std::nullopt;
}

bool is_delegated(const std::string& dir) {
  for (const char* name : {"trusted.delegate", "user.delegate"}) {
    char value[8] = {};
    ssize_t n = ::getxattr(dir.c_str(), name, value, sizeof value - 1);
    if (n > 0 && value[0] == '1') return true;
  }
  return false;
}

Containment choose_containment(CgroupFiles& files, const std::string& configured,
                               const std::optional<std::string>& own,
                               const std::optional<std::string>& delegated) {
  Containment marker;
  if (configured == "off") {
    marker.reason = "[cgroup] root = \"off\" in config.toml";
    return marker;
  }
  std::string root = configured;
  std::string source = "[cgroup] root in config.toml";
  if (root.empty()) {
    if (!own) {
      marker.reason = "no cgroup v2 hierarchy is mounted";
      return marker;
    }
    if (!files.exists(*own + "/cgroup.events")) {
      marker.reason = "the daemon runs in the root cgroup of " + *own +
                      "; set [cgroup] root, or run it as a systemd service with Delegate=yes "
                      "(gpuq service install)";
      return marker;
    }
    if (!delegated) {
      marker.reason = "the daemon's cgroup " + *own +
                      " is not delegated to it (no Delegate=yes); set [cgroup] root to use another";
      return marker;
    }
    root = *delegated;
    source = "the daemon's own cgroup, delegated by systemd";
  }
  bool in_subgroup = own && *own == root + "/daemon";
  bool controllers = !configured.empty() || in_subgroup;
  if (configured.empty() && !in_subgroup) {
    source += "; no memory accounting (add DelegateSubgroup=daemon to the unit, systemd 254+)";
  }
  if (!files.exists(root + "/cgroup.controllers")) {
    marker.reason = root + " is not a cgroup v2 directory";
    return marker;
  }
  RunCgroups tree(files, root);
  if (auto prepared = tree.prepare(controllers); !prepared) {
    marker.reason = "cannot prepare " + root + " for runs: " + prepared.error().message;
    return marker;
  }
  return Containment{"cgroup", root, source};
}

Containment detect_containment(CgroupFiles& files, const std::string& configured) {
  auto mountinfo = os::read_file("/proc/self/mountinfo");
  auto self = os::read_file("/proc/self/cgroup");
  std::optional<std::string> own;
  if (mountinfo && self) own = own_cgroup_dir(*mountinfo, *self);
  std::optional<std::string> delegated;
  if (own && is_delegated(*own)) {
    delegated = own;
  } else if (own && own->ends_with("/daemon") && is_delegated(own->substr(0, own->size() - 7))) {
    delegated = own->substr(0, own->size() - 7);  // systemd's DelegateSubgroup=daemon
  }
  return choose_containment(files, configured, own, delegated);
}

}  // namespace gpuq::runner
