// SPDX-License-Identifier: Apache-2.0
// A cgroup v2 directory made for one test under /sys/fs/cgroup/unified (root only), removed
// after it with everything left in it (killed first). dir() is "" where none can be made: the
// test then skips, saying why. Not thread-safe: one per test, on the test's thread.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

namespace gpuq::testing {

class TestCgroup {
 public:
  TestCgroup() {
    const std::string mount = "/sys/fs/cgroup/unified";
    dir_ = mount + "/gpuq-it-" + std::to_string(::getpid()) + "-" + std::to_string(++count_);
    if (::access((mount + "/cgroup.procs").c_str(), F_OK) != 0 || ::mkdir(dir_.c_str(), 0755) != 0) {
      dir_.clear();
    }
  }
  ~TestCgroup() {
    if (!dir_.empty()) remove(dir_);
  }
  const std::string& dir() const { return dir_; }

 private:
  static void remove(const std::string& dir) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      if (entry.is_directory(ec)) remove(entry.path());
    }
    std::ofstream(dir + "/cgroup.kill") << "1";
    for (int i = 0; i < 1000 && ::rmdir(dir.c_str()) != 0 && errno == EBUSY; ++i) ::usleep(1000);
  }
  static inline int count_ = 0;
  std::string dir_;
};

}  // namespace gpuq::testing
