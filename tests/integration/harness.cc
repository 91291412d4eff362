// SPDX-License-Identifier: Apache-2.0
#include "harness.h"

#include <algorithm>
#include <csignal>
#include <fcntl.h>
#include <fmt/format.h>
#include <sstream>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <thread>
#include <unistd.h>

#include "os/process.h"
#include "unix_http.h"

namespace gpuq::testing {

namespace fs = std::filesystem;

namespace {

// The whole of a /proc file, or what could be read of it: a process that exits while it is
// read makes read(2) fail with ESRCH, which std::ifstream turns into an exception.
std::string read_proc_file(const std::string& path) {
  std::string text;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<size_t>(n));
  ::close(fd);
  return text;
}

// The processes whose environment holds `text` (a variable's name, "=", and its value or a prefix).
std::vector<int> pids_with_env(const std::string& text) {
  std::vector<int> pids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string environ = read_proc_file((entry.path() / "environ").string());
    if (environ.find(text) != std::string::npos) pids.push_back(std::stoi(name));
  }
  return pids;
}

}  // namespace

// A detached daemon's zombie, for one, waits for init to reap it.
bool process_alive(int pid) {
  if (pid <= 0 || ::kill(pid, 0) != 0) return false;
  std::string stat = read_proc_file("/proc/" + std::to_string(pid) + "/stat");
  size_t close = stat.rfind(')');
  return close == std::string::npos || stat.substr(close + 2, 1) != "Z";
}

Harness::Harness(std::string gpus) : gpus_(std::move(gpus)) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  // The pid keeps it unique; the test's name, cut short, says whose it is. Whole names made
  // the daemon's socket path (root/home/gpuq.sock) longer than a unix socket allows (107
  // bytes) under a TMPDIR longer than /tmp.
  std::string name = fmt::format("{}-{}", info->test_suite_name(), info->name());
  name.resize(std::min<size_t>(name.size(), 40));
  root_ = (fs::temp_directory_path() / fmt::format("gpuq-it-{}-{}", getpid(), name)).string();
  fs::remove_all(root_);
  home_ = root_ + "/home";
  work_ = root_ + "/work";
  fs::create_directories(home_);
  fs::create_directories(work_);
}

Harness::~Harness() {
  if (daemon_pid() > 0) stop();
  // Kill every run left behind: their processes carry GPUQ_RUN_DIR under this home.
  std::vector<int> killed;
  for (int pid : pids_with_env("GPUQ_RUN_DIR=" + home_ + "/")) {
    if (::kill(pid, SIGKILL) == 0) killed.push_back(pid);
  }
  // Gone before their directories are removed: a process still writing there would leave some.
  wait_until([&] { return std::none_of(killed.begin(), killed.end(), process_alive); }, 10'000);
  std::error_code ec;
  if (!getenv("GPUQ_KEEP_TEST_DIRS")) fs::remove_all(root_, ec);
}

int Harness::daemon_pid() const {
  auto text = os::read_file(home_ + "/daemon.lock");
  if (!text) return 0;
  int pid = std::atoi(text->c_str());
  return pid > 0 && process_alive(pid) ? pid : 0;
}

void Harness::start(const std::vector<std::string>& flags) {
  std::vector<std::string> args = {"daemon", "--gpus", gpus_, "--detach"};
  args.insert(args.end(), flags.begin(), flags.end());
  auto r = gpuq(args);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
}

void Harness::stop() {
  int pid = daemon_pid();
  if (pid <= 0) return;
  ::kill(pid, SIGTERM);
  for (int i = 0; i < 500 && process_alive(pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void Harness::kill_daemon() {
  int pid = daemon_pid();
  ASSERT_GT(pid, 0);
  ::kill(pid, SIGKILL);
  for (int i = 0; i < 500 && process_alive(pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

CliResult Harness::gpuq(const std::vector<std::string>& args, int timeout_ms) const {
  std::vector<std::string> argv = {GPUQ_BINARY, "--home", home_};
  argv.insert(argv.end(), args.begin(), args.end());
  // The CLI takes its working directory from the process: run it from work_.
  std::vector<std::string> wrapped = {"sh", "-c", "cd \"$0\" && exec \"$@\"", work_};
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  auto result = os::run_command(wrapped, Millis(timeout_ms));
  if (!result) {
    ADD_FAILURE() << "cannot run gpuq: " << result.error().message;
    return {};
  }
  return {result->exit_code, result->out, result->err};
}

nlohmann::json Harness::gpuq_json(const std::vector<std::string>& args) const {
  auto r = gpuq(args);
  EXPECT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << "not JSON: " << r.out;
  return j;
}

int64_t Harness::submit_sh(const std::string& script, const std::vector<std::string>& flags) const {
  std::vector<std::string> args = {"submit", "--json"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {"--", "sh", "-c", script});
  auto j = gpuq_json(args);
  return j.value("id", int64_t{0});
}

nlohmann::json Harness::show(int64_t id) const { return gpuq_json({"show", std::to_string(id), "--json"}); }

nlohmann::json Harness::show_ref(const std::string& ref) const { return gpuq_json({"show", ref, "--json"}); }

bool wait_until(const std::function<bool()>& predicate, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (predicate()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

bool Harness::wait_for(int64_t id, const std::function<bool(const nlohmann::json&)>& predicate,
                       int timeout_ms) const {
  return wait_until([&] { return predicate(show(id)); }, timeout_ms);
}

std::vector<nlohmann::json> Harness::events() const {
  auto r = gpuq({"events", "--json"});
  EXPECT_EQ(r.status, 0) << r.err;
  std::vector<nlohmann::json> out;
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

nlohmann::json Harness::health() const {
  auto answer = unix_get(home_ + "/gpuq.sock", "/v1/health");
  auto body = nlohmann::json::parse(answer.body, nullptr, false);
  EXPECT_EQ(answer.status, 200) << "GET /v1/health: curl " << answer.curl_code << ", "
                                << answer.body;
  EXPECT_TRUE(body.is_object()) << "GET /v1/health: not a JSON object: " << answer.body;
  return body.is_object() ? body : nlohmann::json::object();
}

int64_t Harness::pass() const {
  auto answer = unix_get(home_ + "/gpuq.sock", "/v1/health");
  auto body = nlohmann::json::parse(answer.body, nullptr, false);
  if (answer.status != 200 || !body.is_object() || !body["pass"].is_number_integer()) return -1;
  return body["pass"].get<int64_t>();
}

void Harness::wait_passes(int n) const {
  int64_t start = pass();
  ASSERT_GE(start, 0) << "the daemon does not answer GET /v1/health";
  int64_t target = start + n;
  // Each round's nudge brings at least one more pass, so n rounds are always enough.
  for (int round = 0; round < n; ++round) {
    int64_t seen = pass();
    if (seen >= target) return;
    auto nudge =
        gpuq({"submit", "--hold", "--name", fmt::format("pass-nudge-{}", ++nudges_), "--", "true"});
    ASSERT_EQ(nudge.status, 0) << "cannot submit a held job to ask for a pass: " << nudge.err;
    ASSERT_TRUE(wait_until([&] { return pass() > seen; }, 60'000))
        << "no scheduling pass after pass " << seen << " within 60 s";
  }
  EXPECT_GE(pass(), target);
}

std::vector<int> Harness::run_processes(int64_t job, int run) const {
  // The variable's whole value, up to its NUL: run-1 must not match run-10's processes.
  std::string marker = fmt::format("GPUQ_RUN_DIR={}/jobs/{}/run-{}", home_, job, run);
  marker.push_back('\0');
  std::vector<int> pids;
  for (int pid : pids_with_env(marker)) {
    if (process_alive(pid)) pids.push_back(pid);
  }
  return pids;
}

void Harness::touch(const std::string& name) const { std::ofstream(path(name)) << "x"; }

}  // namespace gpuq::testing
