// SPDX-License-Identifier: Apache-2.0
#include <fcntl.h>
#include <pwd.h>
#include <spawn.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "cli/context.h"
#include "cli/curl_transport.h"

extern char** environ;

namespace gpuq::cli {
namespace {

// xdg-open URL in the background, its output dropped; not waited for (it may wait for the
// browser). The CLI exits soon after, so no zombie lasts.
bool open_in_browser(const std::string& url) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::string program = "xdg-open";
  std::vector<char*> argv = {program.data(), const_cast<char*>(url.c_str()), nullptr};
  pid_t pid = 0;
  int error = ::posix_spawnp(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return error == 0;
}

// The login name of `uid`, or its number when it has none.
std::string login_of(uid_t uid) {
  std::string buf(16 << 10, '\0');
  passwd pw{};
  passwd* found = nullptr;
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr)
    return found->pw_name;
  return std::to_string(uid);
}

}  // namespace

Io process_io() {
  Io io = client_process_io();
  io.connect_tcp = [](const DaemonUrl& url, const std::string& token) {
    return CurlTransport::create_tcp(url, token);
  };
  io.open_url = open_in_browser;
  io.login = [] { return login_of(::getuid()); };  // looked up only when asked: NSS is slow to load
  return io;
}

}  // namespace gpuq::cli
