// SPDX-License-Identifier: Apache-2.0
// Containment by cgroup v2 end to end (docs/containment.md): a real daemon with `[cgroup] root`
// set to a private cgroup of this machine's cgroup v2 hierarchy. A job's setsid'd, double-forked
// sleeper is killed and the run's CPU time recorded; a run adopted by a restarted daemon is
// cleaned up by its cgroup the same way; with `root = "off"` the marker sweep is used and said.
// Skipped, with the reason, where no cgroup v2 subtree can be created.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "harness.h"
#include "test_cgroup.h"

namespace gpuq::testing {
namespace {

void write_config(const Harness& h, const std::string& root) {
  std::ofstream(h.home() + "/config.toml") << "[cgroup]\nroot = \"" << root << "\"\n";
}

pid_t read_pid(const Harness& h, const std::string& name) {
  pid_t pid = 0;
  std::ifstream(h.path(name)) >> pid;
  return pid;
}

// Starts a sleeper that leaves the job's session through a double fork and setsid, writes
// its pid to sleeper.pid and returns once it has.
const char* kEscape =
    "(setsid sh -c 'sleep 300 & echo $! > sleeper.pid' &); "
    "while [ ! -s sleeper.pid ]; do sleep 0.01; done; ";

#define SKIP_WITHOUT_CGROUP(cg) \
  if ((cg).dir().empty()) GTEST_SKIP() << "cannot create a cgroup under /sys/fs/cgroup/unified (no cgroup v2 there, or not root)"

TEST(Containment, AnEscapedSleeperIsKilledByTheRunsCgroupAndItsCpuTimeRecorded) {
  TestCgroup cg;
  SKIP_WITHOUT_CGROUP(cg);
  Harness h("fake:1");
  write_config(h, cg.dir());
  h.start();
  auto health = h.health();
  ASSERT_EQ(health["containment"]["kind"], "cgroup") << health["containment"].dump();
  EXPECT_EQ(health["containment"]["root"], cg.dir());
  EXPECT_NE(h.gpuq({"gpus"}).out.find("containment: cgroup at " + cg.dir()), std::string::npos);

  int64_t id = h.submit_sh(std::string(kEscape) + "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done",
                           {"--gpus", "1"});
  ASSERT_TRUE(h.wait_for(id, [](const nlohmann::json& j) {
    return j["state"] == "succeeded" && j["runs"][0]["cpu_seconds"].is_number();
  })) << h.show(id).dump();
  pid_t sleeper = read_pid(h, "sleeper.pid");
  ASSERT_GT(sleeper, 0);
  EXPECT_FALSE(process_alive(sleeper));
  auto run = h.show(id)["runs"][0];
  EXPECT_GT(run["cpu_seconds"].get<double>(), 0.0);
  EXPECT_TRUE(run["peak_memory_bytes"].is_null());  // no memory controller in this hierarchy
  bool by_cgroup = false;
  for (const auto& e : h.events()) {
    if (e["kind"] == "job.cleanup" && e["job"] == id) {
      by_cgroup = e["data"]["by"] == "cgroup" && e["data"]["confirmed"] == true &&
                  e["data"]["killed_total"].get<int>() >= 1;
    }
  }
  EXPECT_TRUE(by_cgroup) << "the cleanup event should say the cgroup killed the sleeper";
  EXPECT_FALSE(std::filesystem::exists(cg.dir() + "/runs/" + run["run_id"].get<std::string>()));
  h.stop();
}

// A run that left nothing behind ends without a cleanup event of its own (its confirmation
// rides in the next commit): what its cgroup accounted for is recorded all the same.
// A process's children (by /proc/PID/stat's parent), each with its state letter.
std::vector<std::pair<pid_t, char>> children_of(pid_t parent) {
  std::vector<std::pair<pid_t, char>> children;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent) children.emplace_back(std::stoi(name), state);
  }
  return children;
}

// The daemon's children that have exited and that it has not reaped (zombies).
std::vector<pid_t> zombie_children(pid_t parent) {
  std::vector<pid_t> zombies;
  for (const auto& [pid, state] : children_of(parent)) {
    if (state == 'Z') zombies.push_back(pid);
  }
  return zombies;
}

// The daemon's child waiting as a spare shim (`gpuq-shim shim - 3`), 0 when there is none.
pid_t spare_shim_of(pid_t daemon) {
  for (const auto& [pid, state] : children_of(daemon)) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
    std::string argv((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (state != 'Z' && argv.find(std::string("shim\0-\0", 7)) != std::string::npos) return pid;
  }
  return 0;
}

// A run that takes the shim started ahead of it (runner/spare_shim.h) is placed in its own
// cgroup as it is assigned, before its go: its job is born there, and an escape from its
// session is killed by that cgroup as a spawned shim's would be.
TEST(Containment, ARunOfTheSpareShimIsBornInItsOwnCgroup) {
  TestCgroup cg;
  SKIP_WITHOUT_CGROUP(cg);
  Harness h("fake:1");
  write_config(h, cg.dir());
  h.start();
  int64_t first = h.submit_sh("true", {"--gpus", "1"});
  ASSERT_EQ(h.gpuq({"wait", std::to_string(first), "--timeout", "30s"}).status, 0);
  pid_t spare = 0;
  ASSERT_TRUE(wait_until([&] { return (spare = spare_shim_of(h.daemon_pid())) != 0; }, 5'000))
      << "no spare shim after the first run";
  int64_t id = h.submit_sh(std::string(kEscape) + "echo $PPID > shim.pid; cat /proc/self/cgroup > cgroup.txt",
                           {"--gpus", "1"});
  ASSERT_TRUE(h.wait_for(id, [](const nlohmann::json& j) { return j["state"] == "succeeded"; }))
      << h.show(id).dump();
  EXPECT_EQ(read_pid(h, "shim.pid"), spare) << "the second run's shim is the spare";
  const std::string run_id = h.show(id)["runs"][0]["run_id"].get<std::string>();
  std::ifstream cgroup_file(h.path("cgroup.txt"));
  std::string cgroup((std::istreambuf_iterator<char>(cgroup_file)), std::istreambuf_iterator<char>());
  EXPECT_NE(cgroup.find("/runs/" + run_id), std::string::npos) << cgroup;
  pid_t sleeper = read_pid(h, "sleeper.pid");
  ASSERT_GT(sleeper, 0);
  EXPECT_TRUE(wait_until([&] { return !process_alive(sleeper); }, 10'000)) << "the escaped sleeper lives on";
  h.stop();
}

TEST(Containment, ACleanRunsCpuTimeIsRecordedToo) {
  TestCgroup cg;
  SKIP_WITHOUT_CGROUP(cg);
  Harness h("fake:1");
  write_config(h, cg.dir());
  h.start();
  int64_t id = h.submit_sh("i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done", {"--gpus", "1"});
  ASSERT_EQ(h.gpuq({"wait", std::to_string(id), "--timeout", "30s"}).status, 0);
  ASSERT_TRUE(h.wait_for(id, [](const nlohmann::json& j) {
    return j["runs"][0]["cpu_seconds"].is_number();
  })) << h.show(id).dump();
  EXPECT_GT(h.show(id)["runs"][0]["cpu_seconds"].get<double>(), 0.0);
  for (const auto& e : h.events()) {
    EXPECT_FALSE(e["kind"] == "job.cleanup" && e["job"] == id) << "a clean end has no event: " << e.dump();
  }
  h.stop();
}

TEST(Containment, ARunAdoptedByARestartedDaemonIsCleanedUpByItsCgroup) {
  TestCgroup cg;
  SKIP_WITHOUT_CGROUP(cg);
  Harness h("fake:1");
  write_config(h, cg.dir());
  h.start();
  int64_t id = h.submit_sh(std::string(kEscape) + "while [ ! -e go ]; do sleep 0.02; done", {"--gpus", "1"});
  ASSERT_TRUE(h.wait_for(id, [&](const nlohmann::json& j) {
    return j["state"] == "running" && read_pid(h, "sleeper.pid") > 0;
  }));
  h.kill_daemon();
  h.start();
  h.touch("go");
  ASSERT_TRUE(h.wait_for(id, [](const nlohmann::json& j) {
    return j["state"] == "succeeded" && j["runs"][0]["cpu_seconds"].is_number();
  })) << h.show(id).dump();
  EXPECT_FALSE(process_alive(read_pid(h, "sleeper.pid")));
  // The GPU serves again.
  int64_t next = h.submit_sh("true", {"--gpus", "1"});
  EXPECT_EQ(h.gpuq({"wait", std::to_string(next), "--timeout", "30s"}).status, 0);
  h.stop();
}

// A run whose shim was started but could not be placed in its cgroup (here: the runs' cgroup
// was removed under the daemon) fails to start; its gpuq-shim, the daemon's child, exits when
// its go pipe closes and is reaped, not left a zombie.
TEST(Containment, AShimThatCouldNotBePlacedIsReaped) {
  TestCgroup cg;
  SKIP_WITHOUT_CGROUP(cg);
  Harness h("fake:1");
  write_config(h, cg.dir());
  h.start();
  ASSERT_EQ(::rmdir((cg.dir() + "/runs").c_str()), 0) << std::strerror(errno);
  int64_t id = h.submit_sh("true", {"--gpus", "1"});
  ASSERT_TRUE(wait_until([&] {
    for (const auto& e : h.events()) {
      if (e["kind"] == "job.start_failed" && e["job"] == id) return true;
    }
    return false;
  })) << h.show(id).dump();
  const pid_t daemon = h.daemon_pid();
  EXPECT_TRUE(wait_until([&] { return zombie_children(daemon).empty(); }, 5'000))
      << zombie_children(daemon).size() << " shims left unreaped";
  h.stop();
}

TEST(Containment, WithoutACgroupRootTheMarkerSweepIsUsedAndSaid) {
  Harness h("fake:1");
  write_config(h, "off");
  h.start();
  auto health = h.health();
  EXPECT_EQ(health["containment"]["kind"], "marker");
  EXPECT_TRUE(health["containment"]["root"].is_null());
  EXPECT_NE(health["containment"]["reason"].get<std::string>().find("off"), std::string::npos);
  EXPECT_NE(h.gpuq({"gpus"}).out.find("containment: marker"), std::string::npos);
  int64_t id = h.submit_sh(std::string(kEscape) + "true", {"--gpus", "1"});
  ASSERT_EQ(h.gpuq({"wait", std::to_string(id), "--timeout", "30s"}).status, 0);
  // The sweep finds the escaped sleeper by its marker.
  int64_t next = h.submit_sh("true", {"--gpus", "1"});
  ASSERT_EQ(h.gpuq({"wait", std::to_string(next), "--timeout", "30s"}).status, 0);
  EXPECT_FALSE(process_alive(read_pid(h, "sleeper.pid")));
  EXPECT_TRUE(h.show(id)["runs"][0]["cpu_seconds"].is_null());
  h.stop();
}

}  // namespace
}  // namespace gpuq::testing
