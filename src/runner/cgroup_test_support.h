// SPDX-License-Identifier: Apache-2.0
// For tests that need a real cgroup v2 subtree: a private directory under this machine's cgroup
// v2 mount (/sys/fs/cgroup/unified beside v1 controllers, or /sys/fs/cgroup on a unified
// hierarchy), created for one test and removed after it, with every group under it. Tests
// GTEST_SKIP with available()'s reason where none can be written. Test-only; not thread-safe.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>

namespace gpuq::runner::testing {

class PrivateCgroupRoot {
 public:
  PrivateCgroupRoot() {
    for (const char* mount : {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
      if (::access((std::string(mount) + "/cgroup.subtree_control").c_str(), F_OK) != 0) continue;
      static std::atomic<int> counter{0};
      std::string dir = std::string(mount) + "/gpuq-test-" + std::to_string(::getpid()) + "-" +
                        std::to_string(counter++);
      if (::mkdir(dir.c_str(), 0755) == 0) {
        root_ = dir;
        return;
      }
      why_ = "cannot create a cgroup under " + std::string(mount) + " (not root, or not delegated)";
      return;
    }
    why_ = "no cgroup v2 hierarchy is mounted at /sys/fs/cgroup/unified or /sys/fs/cgroup";
  }
  ~PrivateCgroupRoot() {
    if (!root_.empty()) remove_tree(root_);
  }
  PrivateCgroupRoot(const PrivateCgroupRoot&) = delete;

  bool available() const { return !root_.empty(); }
  const std::string& why_not() const { return why_; }
  const std::string& path() const { return root_; }

  // Kills what is left in `dir` and its children, then removes them, deepest first.
  static void remove_tree(const std::string& dir) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      if (entry.is_directory(ec)) remove_tree(entry.path());
    }
    std::ofstream(dir + "/cgroup.kill") << "1";
    for (int tries = 0; tries < 1000 && ::rmdir(dir.c_str()) != 0 && errno == EBUSY; ++tries) {
      ::usleep(1000);
    }
  }

 private:
  std::string root_;
  std::string why_;
};

}  // namespace gpuq::runner::testing
