// SPDX-License-Identifier: Apache-2.0
#include "cli/context.h"

#include <fcntl.h>
#include <pwd.h>
#include <spawn.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <thread>

#include "base/time.h"
#include "cli/curl_transport.h"
#include "cli/socket_transport.h"

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
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr) return found->pw_name;
  return std::to_string(uid);
}

}  // namespace

Io process_io() {
  Io io;
  io.out = &std::cout;
  io.err = &std::cerr;
  io.color = want_color(::isatty(STDOUT_FILENO) == 1, std::getenv("NO_COLOR") != nullptr);
  io.connect = [](const std::string& socket_path) -> Result<std::unique_ptr<Transport>> {
    return SocketTransport::create(socket_path);
  };
  io.connect_tcp = [](const DaemonUrl& url, const std::string& token) {
    return CurlTransport::create_tcp(url, token);
  };
  io.open_url = open_in_browser;
  io.wall_ms = [] { return wall_now_ms(); };
  io.steady_ms = [] {
    return std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  io.sleep = [](Millis duration) { std::this_thread::sleep_for(duration); };
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) io.environ.emplace_back(*e);
  std::error_code ec;
  io.cwd = std::filesystem::current_path(ec).string();
  io.login = [] { return login_of(::getuid()); };  // looked up only when asked: NSS is slow to load
  return io;
}

DaemonClient& Context::client() {
  if (client_) return *client_;
  if (remote_.base.empty()) {
    client_ = std::make_unique<DaemonClient>(io_.connect, home_, home_given_);
  } else {
    TransportFactory tcp = [connect = io_.connect_tcp, url = remote_, token = token_](const std::string&)
        -> Result<std::unique_ptr<Transport>> {
      if (!connect) return fail(Code::kInternal, "this build cannot reach a daemon over TCP");
      return connect(url, token);
    };
    client_ = std::make_unique<DaemonClient>(std::move(tcp), home_, home_given_, remote_.base);
  }
  return *client_;
}

int Context::report(int exit_code, std::string_view message) const {
  err() << "gpuq: " << message << '\n';
  err().flush();
  return exit_code;
}

}  // namespace gpuq::cli
