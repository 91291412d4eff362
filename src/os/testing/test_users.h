// SPDX-License-Identifier: Apache-2.0
// Real users for tests of work that runs as its submitter (a root daemon on a shared box). Made
// with `useradd -M -N` under names unlikely to clash (`gpuqt-PID-TAG`, within the 32 characters a
// login may have) and removed with `userdel -r` when the TestUsers is destroyed, so also when
// the test fails. Tests that need them skip unless they run as root with useradd available
// (TestUsers::unavailable() says why). owner_of() says who owns a file the test looks at. Not
// thread-safe: one per test, on the test's thread.
#pragma once

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "os/identity.h"

namespace gpuq::os::testing {

class TestUsers {
 public:
  // Why real users cannot be made here; "" when they can.
  static std::string unavailable() {
    if (::geteuid() != 0) return "needs root to create users (run the tests as root, as CI does)";
    if (::access("/usr/sbin/useradd", X_OK) != 0) return "needs /usr/sbin/useradd to create users";
    return "";
  }

  TestUsers() = default;
  TestUsers(const TestUsers&) = delete;
  TestUsers& operator=(const TestUsers&) = delete;
  ~TestUsers() {
    for (const auto& login : made_) run(fmt::format("/usr/sbin/userdel -r {} >/dev/null 2>&1", login));
  }

  // A new user (no home directory made, no group of its own: its primary group is the system's
  // default) and its identity; an empty login when useradd failed.
  UserIdentity add(const std::string& tag) {
    std::string login = fmt::format("gpuqt-{}-{}", ::getpid(), tag);
    if (run(fmt::format("/usr/sbin/useradd -M -N -s /bin/bash {} >/dev/null 2>&1", login)) != 0) return {};
    made_.push_back(login);
    auto who = identity_of_login(login);
    return who ? *who : UserIdentity{};
  }

 private:
  static int run(const std::string& command) {
    int status = std::system(command.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::vector<std::string> made_;
};

// Who owns `path` (not followed if a link) and its permission bits; uid (uid_t)-1 when it
// cannot be looked at.
struct FileOwner {
  uid_t uid = static_cast<uid_t>(-1);
  mode_t mode = 0;
};
inline FileOwner owner_of(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return {};
  return {st.st_uid, st.st_mode & 07777};
}

}  // namespace gpuq::os::testing
