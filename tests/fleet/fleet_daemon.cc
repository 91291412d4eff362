// SPDX-License-Identifier: Apache-2.0
#include "fleet_daemon.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "os/command.h"

namespace gpuq::fleet::testing {

namespace fs = std::filesystem;

namespace {

constexpr const char* kMarker = "GPUQ_E2E_NODE=";
constexpr auto kCommandTimeout = std::chrono::seconds(60);

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Live processes whose environment holds `text` (a whole "NAME=VALUE" entry or its prefix).
std::vector<int> pids_with_env(const std::string& text) {
  std::vector<int> pids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string environ = read_text((entry.path() / "environ").string());
    // An entry starts the block or follows a NUL.
    size_t at = environ.find(text);
    while (at != std::string::npos && at != 0 && environ[at - 1] != '\0') at = environ.find(text, at + 1);
    if (at != std::string::npos && process_alive(std::stoi(name))) pids.push_back(std::stoi(name));
  }
  return pids;
}

CliOutput run(const std::vector<std::string>& argv, const std::vector<std::string>& env = {}) {
  os::CommandOptions options;
  options.env = env;
  auto result = os::run_command_with(argv, Millis(std::chrono::milliseconds(kCommandTimeout)), options);
  if (!result) return {-1, "", "cannot run " + argv.front() + ": " + result.error().message};
  return {result->exit_code, result->out, result->err};
}

std::string toml_string(const std::string& text) { return nlohmann::json(text).dump(); }

}  // namespace

bool wait_until(const std::function<bool()>& predicate, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    if (predicate()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool process_alive(int pid) {
  if (pid <= 0 || ::kill(pid, 0) != 0) return false;
  std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  size_t close = stat.rfind(')');
  return close == std::string::npos || stat.substr(close + 2, 1) != "Z";
}

int read_pid(const std::string& file) {
  std::string text = read_text(file);
  if (text.empty() || text.back() != '\n') return 0;  // not written whole yet
  return std::atoi(text.c_str());
}

std::vector<std::string> read_lines(const std::string& file) {
  std::vector<std::string> lines;
  std::istringstream in(read_text(file));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

FleetDaemon::FleetDaemon(std::string dir, FleetDaemonOptions options)
    : dir_(std::move(dir)), home_(dir_ + "/home"), work_(dir_ + "/work"), options_(std::move(options)) {
  fs::create_directories(home_);
  fs::create_directories(work_);
  fs::permissions(home_, fs::perms::owner_all, fs::perm_options::replace);
}

FleetDaemon::~FleetDaemon() {
  stop();
  kill();
  std::error_code ec;
  if (std::getenv("GPUQ_KEEP_TEST_DIRS") == nullptr) fs::remove_all(dir_, ec);
}

Status FleetDaemon::start() {
  std::string config = "[fleet]\n";
  config += fmt::format("workdir = {}\n", toml_string(work_));
  // The tests' jobs write little: a test machine with less than the default 10 GiB free must
  // not make its nodes refuse them.
  config += "min_free_disk = \"64MiB\"\n";
  config += fmt::format("endpoint = {}\nregion = {}\n", toml_string(options_.store.endpoint), toml_string(options_.store.region));
  config += fmt::format("access_key_id = {}\nsecret_access_key = {}\n", toml_string(options_.store.access_key_id),
                        toml_string(options_.store.secret_access_key));
  if (options_.short_timings) {
    config += fmt::format("poll = \"200ms\"\nheartbeat = \"500ms\"\nlease = \"{}\"\nsync_every = \"500ms\"\ntimeout = \"1s\"\n",
                          options_.lease);
  }
  config += options_.fleet_config;
  std::ofstream(home_ + "/config.toml") << config;
  std::vector<std::string> argv = {GPUQ_BINARY, "--home",  home_, "daemon", "--detach", "--gpus",
                                   options_.gpus, "--fleet", options_.url, "--node", options_.node,
                                   "--http", "off"};
  if (!options_.classes.empty()) {
    std::string classes;
    for (const auto& klass : options_.classes) classes += (classes.empty() ? "" : ",") + klass;
    argv.insert(argv.end(), {"--classes", classes});
  }
  auto started = run(argv, {kMarker + home_});
  if (started.status != 0) {
    return fail(Code::kInternal, fmt::format("gpuq daemon (node {}) did not start: {}{}\n{}", options_.node,
                                             started.out, started.err, read_text(home_ + "/daemon.log")));
  }
  return ok();
}

int FleetDaemon::pid() const {
  int pid = std::atoi(read_text(home_ + "/daemon.lock").c_str());
  return process_alive(pid) ? pid : 0;
}

void FleetDaemon::stop() {
  int daemon = pid();
  if (daemon <= 0) return;
  ::kill(daemon, SIGTERM);
  wait_until([&] { return !process_alive(daemon); }, 10'000);
}

std::vector<int> FleetDaemon::processes() const {
  std::vector<int> pids = pids_with_env(kMarker + home_ + '\0');
  for (int pid : pids_with_env("GPUQ_RUN_DIR=" + home_ + "/")) pids.push_back(pid);
  return pids;
}

void FleetDaemon::kill() {
  // The daemon first, so that it sees none of its runs end.
  if (int daemon = pid(); daemon > 0) ::kill(daemon, SIGKILL);
  // Again until none is left: a shim may be forking its job right now.
  wait_until(
      [&] {
        auto pids = processes();
        for (int pid : pids) ::kill(pid, SIGKILL);
        return pids.empty();
      },
      10'000);
}

CliOutput FleetDaemon::gpuq(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {GPUQ_BINARY, "--home", home_};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv);
}

std::vector<nlohmann::json> FleetDaemon::events() const {
  std::vector<nlohmann::json> events;
  auto out = gpuq({"events", "--json"});
  if (out.status != 0) return events;
  std::istringstream lines(out.out);
  for (std::string line; std::getline(lines, line);) {
    auto event = nlohmann::json::parse(line, nullptr, false);
    if (event.is_object()) events.push_back(std::move(event));
  }
  return events;
}

std::optional<nlohmann::json> FleetDaemon::event(const std::string& kind, const std::string& field,
                                                 const std::string& value) const {
  for (auto& event : events()) {
    if (event.value("kind", "") != kind || !event.contains("data") || !event["data"].is_object()) continue;
    const auto& data = event["data"];
    if (data.contains(field) && data[field].is_string() && data[field].get<std::string>() == value) return event;
  }
  return std::nullopt;
}

std::vector<int> FleetDaemon::run_processes() const { return pids_with_env("GPUQ_RUN_DIR=" + home_ + "/"); }

CliOutput fleet_cli(const std::string& scratch_home, const std::string& url, const StoreOptions& store,
                    std::vector<std::string> args) {
  std::vector<std::string> argv = {GPUQ_BINARY, "fleet"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--fleet", url});
  return run(argv, {"GPUQ_HOME=" + scratch_home, "AWS_ENDPOINT_URL=" + store.endpoint,
                    "AWS_REGION=" + store.region, "AWS_ACCESS_KEY_ID=" + store.access_key_id,
                    "AWS_SECRET_ACCESS_KEY=" + store.secret_access_key, "AWS_SESSION_TOKEN="});
}

}  // namespace gpuq::fleet::testing
