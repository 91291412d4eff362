#include "harness.h"

#include <csignal>
#include <fmt/format.h>
#include <sstream>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <thread>
#include <unistd.h>

#include "os/process.h"

namespace gpuq::testing {

namespace fs = std::filesystem;

namespace {
// Alive and not a zombie: a detached daemon's zombie waits for init to reap it.
bool alive(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close = stat.rfind(')');
  return close == std::string::npos || stat.substr(close + 2, 1) != "Z";
}
}  // namespace

Harness::Harness(std::string gpus) : gpus_(std::move(gpus)) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  root_ = (fs::temp_directory_path() /
           fmt::format("gpuq-it-{}-{}-{}", getpid(), info->test_suite_name(), info->name()))
              .string();
  fs::remove_all(root_);
  home_ = root_ + "/home";
  work_ = root_ + "/work";
  fs::create_directories(home_);
  fs::create_directories(work_);
}

Harness::~Harness() {
  if (daemon_pid() > 0) stop();
  // Kill every run left behind: their processes carry GPUQ_RUN_DIR under this home.
  std::string marker = "GPUQ_RUN_DIR=" + home_ + "/";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "environ", std::ios::binary);
    std::string environ((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (environ.find(marker) != std::string::npos) ::kill(std::stoi(name), SIGKILL);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (!getenv("GPUQ_KEEP_TEST_DIRS")) fs::remove_all(root_, ec);
}

int Harness::daemon_pid() const {
  auto text = os::read_file(home_ + "/daemon.lock");
  if (!text) return 0;
  int pid = std::atoi(text->c_str());
  return pid > 0 && alive(pid) ? pid : 0;
}

void Harness::start() {
  auto r = gpuq({"daemon", "--gpus", gpus_, "--detach"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
}

void Harness::stop() {
  int pid = daemon_pid();
  if (pid <= 0) return;
  ::kill(pid, SIGTERM);
  for (int i = 0; i < 500 && alive(pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void Harness::kill_daemon() {
  int pid = daemon_pid();
  ASSERT_GT(pid, 0);
  ::kill(pid, SIGKILL);
  for (int i = 0; i < 500 && alive(pid); ++i) {
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

void Harness::touch(const std::string& name) const { std::ofstream(path(name)) << "x"; }

}  // namespace gpuq::testing
