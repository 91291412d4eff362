// SPDX-License-Identifier: Apache-2.0
// What a GPU really holds: leftovers found by their run marker and killed before the next job,
// attention when they cannot be, foreign processes staged through the fake probe, and each
// run's peak memory becoming the footprint of later jobs of the same name.
#include <csignal>
#include <fstream>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

namespace gpuq::testing {
namespace {

std::vector<nlohmann::json> events_of(const Harness& h, const std::string& kind) {
  std::vector<nlohmann::json> out;
  for (const auto& e : h.events()) {
    if (e["kind"] == kind) out.push_back(e);
  }
  return out;
}

nlohmann::json gpu_named(const Harness& h, const std::string& name) {
  nlohmann::json status = h.gpuq_json({"status", "--json"});
  for (const auto& r : status["resources"]) {
    if (r["name"] == name) return r;
  }
  return nullptr;
}

pid_t read_pid(const Harness& h, const std::string& name) {
  std::ifstream in(h.path(name));
  pid_t pid = 0;
  in >> pid;
  return pid;
}

bool alive(pid_t pid) {
  if (pid <= 0 || ::kill(pid, 0) != 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close = stat.rfind(')');
  return close == std::string::npos || stat.substr(close + 2, 1) != "Z";
}

// A job whose escaped child ignores SIGTERM: with SIGKILL only after 30 s and a cleanup limit
// below that, its cleanup cannot be confirmed.
int64_t submit_leaver_that_ignores_term(Harness& h) {
  std::ofstream(h.home() + "/config.toml") << "[cleanup]\npoll = \"20ms\"\nlimit = \"1s\"\n"
                                              "[runs]\nkill_grace = \"30s\"\n";
  h.start();
  return h.submit_sh(
      "(setsid sh -c 'trap \"\" TERM; echo $$ > stray.pid; while :; do sleep 0.1; done' &) ; "
      "while [ ! -s stray.pid ]; do sleep 0.01; done",
      {"--gpus", "1"});
}

TEST(GpuTruth, SetsidChildKilledByMarker) {
  Harness h("fake:1");
  std::ofstream(h.home() + "/config.toml") << "[cleanup]\npoll = \"20ms\"\n";
  h.start();
  // The child leaves the job's process group and session, like an inference server's engine.
  int64_t leaver = h.submit_sh(
      "(setsid sh -c 'echo $$ > stray.pid; exec sleep 300' &) ; "
      "while [ ! -s stray.pid ]; do sleep 0.01; done; echo left",
      {"--gpus", "1"});
  // Alive means not a zombie: an orphan's zombie may wait long for a busy init to reap it.
  int64_t next = h.submit_sh(
      "s=$(cut -d' ' -f3 /proc/$(cat stray.pid)/stat 2>/dev/null); "
      "if [ -n \"$s\" ] && [ \"$s\" != Z ]; then echo alive; exit 1; fi; echo gone",
      {"--gpus", "1"});
  ASSERT_EQ(h.gpuq({"wait", std::to_string(leaver), std::to_string(next), "--timeout", "30s"}).status, 0)
      << h.show(next).dump(2);
  EXPECT_EQ(h.gpuq({"logs", std::to_string(next)}).out, "gone\n");
  pid_t stray = read_pid(h, "stray.pid");
  EXPECT_FALSE(alive(stray));
  auto cleanups = events_of(h, "job.cleanup");
  ASSERT_EQ(cleanups.size(), 1u);
  EXPECT_EQ(cleanups[0]["job"], leaver);
  EXPECT_EQ(cleanups[0]["data"]["confirmed"], true);
  ASSERT_EQ(cleanups[0]["data"]["killed"].size(), 1u);
  EXPECT_EQ(cleanups[0]["data"]["killed"][0]["pid"], stray);
  EXPECT_NE(cleanups[0]["data"]["killed"][0]["command"].get<std::string>().find("sleep 300"), std::string::npos);
}

TEST(GpuTruth, UnconfirmedCleanupMeansAttention) {
  Harness h("fake:2");
  int64_t leaver = submit_leaver_that_ignores_term(h);
  ASSERT_EQ(h.gpuq({"wait", std::to_string(leaver), "--timeout", "30s"}).status, 0);
  std::string gpu = h.show(leaver)["runs"][0]["gpus"][0].is_number()
                        ? "gpu" + std::to_string(h.show(leaver)["runs"][0]["gpus"][0].get<int>())
                        : h.show(leaver)["runs"][0]["gpus"][0].get<std::string>();
  pid_t stray = read_pid(h, "stray.pid");
  ASSERT_TRUE(wait_until([&] { return gpu_named(h, gpu)["state"] == "attention"; })) << gpu_named(h, gpu).dump(2);
  auto attention = events_of(h, "resource.attention");
  ASSERT_EQ(attention.size(), 1u);
  EXPECT_EQ(attention[0]["data"]["gpu"], gpu);
  // Listed by pid: the stray's `sleep 0.1` children are there too, and after pids wrap at
  // pid_max one of them may come first.
  nlohmann::json listed;
  for (const auto& process : attention[0]["data"]["processes"]) {
    if (process["pid"] == stray) listed = process;
  }
  ASSERT_TRUE(listed.is_object()) << "the stray " << stray << " is not listed: " << attention[0].dump();
  EXPECT_EQ(listed["user"], "root") << attention[0].dump();
  EXPECT_NE(listed["command"].get<std::string>().find("sh -c"), std::string::npos) << listed.dump();

  // The other GPU keeps serving; nothing goes to the one in attention.
  int64_t a = h.submit_sh("echo $CUDA_VISIBLE_DEVICES", {"--gpus", "1"});
  int64_t b = h.submit_sh("echo $CUDA_VISIBLE_DEVICES", {"--gpus", "1"});
  int64_t both = h.submit_sh("echo $CUDA_VISIBLE_DEVICES", {"--gpus", "2"});
  ASSERT_EQ(h.gpuq({"wait", std::to_string(a), std::to_string(b), "--timeout", "30s"}).status, 0);
  std::string other = gpu == "gpu0" ? "1\n" : "0\n";
  EXPECT_EQ(h.gpuq({"logs", std::to_string(a)}).out, other);
  EXPECT_EQ(h.gpuq({"logs", std::to_string(b)}).out, other);
  h.wait_passes(2);  // two scheduling passes have seen the free GPU beside the one in attention
  EXPECT_EQ(h.show(both)["state"], "pending");

  // A person looks, kills the process, and releases the GPU.
  auto refused = h.gpuq({"release", "--attention", gpu == "gpu0" ? "gpu1" : "gpu0"});
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.err.find("not in attention"), std::string::npos) << refused.err;
  ::kill(stray, SIGKILL);
  auto released = h.gpuq({"release", "--attention", gpu});
  ASSERT_EQ(released.status, 0) << released.err;
  ASSERT_EQ(h.gpuq({"wait", std::to_string(both), "--timeout", "30s"}).status, 0);
  EXPECT_EQ(h.gpuq({"logs", std::to_string(both)}).out, "0,1\n");
  EXPECT_EQ(events_of(h, "resource.released").size(), 1u);
}

TEST(GpuTruth, AttentionSurvivesRestart) {
  Harness h("fake:1");
  int64_t leaver = submit_leaver_that_ignores_term(h);
  ASSERT_EQ(h.gpuq({"wait", std::to_string(leaver), "--timeout", "30s"}).status, 0);
  ASSERT_TRUE(wait_until([&] { return gpu_named(h, "gpu0")["state"] == "attention"; }));
  ::kill(read_pid(h, "stray.pid"), SIGKILL);
  h.stop();
  h.start();
  EXPECT_EQ(gpu_named(h, "gpu0")["state"], "attention");
  int64_t next = h.submit_sh("true", {"--gpus", "1"});
  h.wait_passes(2);  // two scheduling passes have seen the job, and started nothing
  auto waiting = h.show(next);
  EXPECT_EQ(waiting["state"], "pending");
  EXPECT_TRUE(waiting["runs"].empty()) << waiting.dump(2);
  EXPECT_EQ(gpu_named(h, "gpu0")["state"], "attention");
  ASSERT_EQ(h.gpuq({"release", "--attention", "0"}).status, 0);
  ASSERT_EQ(h.gpuq({"wait", std::to_string(next), "--timeout", "30s"}).status, 0);
}

class ForeignProcess : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv("GPUQ_FAKE_GPU_STATE");
    if (sleeper_ > 0) {
      ::kill(sleeper_, SIGKILL);
      ::waitpid(sleeper_, nullptr, 0);
    }
  }
  // A process outside gpuq, as someone's notebook would be.
  pid_t start_sleeper() {
    sleeper_ = ::fork();
    if (sleeper_ == 0) {
      ::execlp("sleep", "sleep", "300", nullptr);
      ::_exit(127);
    }
    return sleeper_;
  }
  pid_t sleeper_ = 0;
};

TEST_F(ForeignProcess, JobsAvoidForeignGpu) {
  Harness h("fake:2");
  std::ofstream(h.home() + "/config.toml") << "[cleanup]\npoll = \"20ms\"\n"
                                              "[gpu]\nprobe_interval = \"100ms\"\nforeign_repeat = \"300ms\"\n";
  std::string state = h.path("gpu-state.json");
  setenv("GPUQ_FAKE_GPU_STATE", state.c_str(), 1);
  pid_t pid = start_sleeper();
  std::ofstream(state) << "{\"gpus\":[{\"index\":1,\"memory_used_mib\":900,\"utilization\":0,"
                          "\"processes\":[{\"pid\":" << pid << ",\"used_memory_mib\":900}]}]}";
  h.start();
  ASSERT_TRUE(wait_until([&] { return gpu_named(h, "gpu1")["state"] == "foreign"; }));
  auto gpu1 = gpu_named(h, "gpu1");
  EXPECT_EQ(gpu1["foreign"]["processes"][0]["pid"], pid);
  EXPECT_EQ(gpu1["foreign"]["processes"][0]["command"], "sleep 300");
  EXPECT_EQ(gpu1["memory_used_mib"], 900);

  std::vector<int64_t> jobs;
  for (int i = 0; i < 3; ++i) jobs.push_back(h.submit_sh("echo $CUDA_VISIBLE_DEVICES", {"--gpus", "1"}));
  for (int64_t id : jobs) {
    ASSERT_EQ(h.gpuq({"wait", std::to_string(id), "--timeout", "30s"}).status, 0);
    EXPECT_EQ(h.gpuq({"logs", std::to_string(id)}).out, "0\n");
  }
  // Reminders while it lasts.
  ASSERT_TRUE(wait_until([&] { return events_of(h, "resource.foreign").size() >= 2; }));
  auto foreign = events_of(h, "resource.foreign");
  EXPECT_EQ(foreign[0]["data"]["gpu"], "gpu1");
  EXPECT_EQ(foreign[0]["data"]["processes"][0]["pid"], pid);
  EXPECT_EQ(foreign[0]["data"]["processes"][0]["used_memory_mib"], 900);
  EXPECT_EQ(foreign[0]["data"]["reminder"], false);
  EXPECT_EQ(foreign[1]["data"]["reminder"], true);

  // It leaves: the GPU serves again.
  std::ofstream(state) << "{\"gpus\":[]}";
  ASSERT_TRUE(wait_until([&] { return !events_of(h, "resource.freed").empty(); }));
  EXPECT_NE(gpu_named(h, "gpu1")["state"], "foreign");
  int64_t both = h.submit_sh("echo $CUDA_VISIBLE_DEVICES", {"--gpus", "2"});
  ASSERT_EQ(h.gpuq({"wait", std::to_string(both), "--timeout", "30s"}).status, 0);
  EXPECT_EQ(h.gpuq({"logs", std::to_string(both)}).out, "0,1\n");
}

TEST_F(ForeignProcess, PeakBecomesFootprint) {
  Harness h("fake:1");
  std::ofstream(h.home() + "/config.toml") << "[cleanup]\npoll = \"20ms\"\n[gpu]\nprobe_interval = \"50ms\"\n";
  std::string state = h.path("gpu-state.json");
  setenv("GPUQ_FAKE_GPU_STATE", state.c_str(), 1);
  h.start();
  // The job puts itself on the fake GPU with 900 MiB, then 1500, then leaves it.
  auto plan = [&](const std::string& tag) {
    std::ofstream(h.path("plan.json"))
        << "{\"jobs\":[{\"id\":\"train\",\"gpus\":1,\"command\":[\"sh\",\"-c\","
        << nlohmann::json(
               "put() { echo \"{\\\"gpus\\\":[{\\\"index\\\":0,\\\"memory_used_mib\\\":$1,\\\"processes\\\":"
               "[{\\\"pid\\\":$$,\\\"used_memory_mib\\\":$1}]}]}\" > " + state + ".tmp && mv " + state + ".tmp " + state + "; }; "
               "put 900; sleep 0.5; put 1500; sleep 0.5; echo '{\"gpus\":[]}' > " + state + "; echo " + tag)
               .dump()
        << "]}]}";
  };
  plan("v1");
  auto r = h.gpuq({"submit", "plan.json"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  ASSERT_EQ(h.gpuq({"wait", "train", "--timeout", "30s"}).status, 0) << h.show_ref("train").dump(2);
  auto first = h.show_ref("train");
  EXPECT_EQ(first["runs"][0]["peak_gpu_mem_mib"], 1500) << first.dump(2);
  EXPECT_TRUE(events_of(h, "resource.foreign").empty()) << "the run's own process is not foreign";
  EXPECT_TRUE(first["gpu_mem_learned"].is_null()) << "only later jobs learn";

  // A changed plan replaces the finished job; the new one inherits the footprint.
  plan("v2");
  r = h.gpuq({"submit", "plan.json", "--replace"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  auto second = h.show_ref("train");
  EXPECT_NE(second["id"], first["id"]);
  EXPECT_EQ(second["gpu_mem_learned"]["mib"], 1500) << second.dump(2);
  EXPECT_EQ(second["gpu_mem_learned"]["runs"], 1);
  auto text = h.gpuq({"show", "train"});
  EXPECT_NE(text.out.find("1500 MiB learned from 1 successful run"), std::string::npos) << text.out;
  ASSERT_EQ(h.gpuq({"wait", "train", "--timeout", "30s"}).status, 0);
}

}  // namespace
}  // namespace gpuq::testing
