// Preemption end to end: a better job takes the GPU of a worse one that yields (and resumes
// from its checkpoint), is restarted, or is never interrupted; deadlines, natural exits and
// cancels that race a preemption.
#include <fstream>
#include <gtest/gtest.h>
#include <set>
#include <thread>

#include "harness.h"

namespace gpuq::testing {
namespace {

void configure(const Harness& h, const std::string& extra = "") {
  std::ofstream(h.home() + "/config.toml") << "[cleanup]\npoll = \"20ms\"\n" << extra;
}

std::string log_of(const Harness& h, int64_t id, int run) {
  return h.gpuq({"logs", std::to_string(id), "--run", std::to_string(run)}).out;
}

// The position of the first event of `kind` for `job` (and run, when > 0); -1 when none.
int position(const std::vector<nlohmann::json>& events, const std::string& kind, int64_t job, int run = 0) {
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    if (e["kind"] == kind && e["job"] == job && (run == 0 || e["run"] == run)) return static_cast<int>(i);
  }
  return -1;
}

bool any_event(const Harness& h, const std::string& kind) {
  for (const auto& e : h.events()) {
    if (e["kind"] == kind) return true;
  }
  return false;
}

TEST(Preemption, YieldThenResume) {
  Harness h("fake:1");
  configure(h, "[preemption]\nyield_grace = \"60s\"\n");
  h.start();
  setenv("COUNT_UNIT_SECONDS", "0.4", 1);
  auto low_json = h.gpuq_json({"submit", "--json", "--gpus", "1", "--priority", "low", "--name", "counter",
                               std::string(GPUQ_EXAMPLES_DIR) + "/checkpoint/count.sh", "20"});
  unsetenv("COUNT_UNIT_SECONDS");
  int64_t low = low_json.value("id", int64_t{0});
  ASSERT_GT(low, 0) << low_json.dump();
  EXPECT_EQ(low_json["preempt"], "yield") << "the script's header asks for yield";
  ASSERT_TRUE(wait_until([&] { return log_of(h, low, 1).find("unit 5\n") != std::string::npos; }))
      << log_of(h, low, 1);
  int64_t high = h.submit_sh("echo high ran on $CUDA_VISIBLE_DEVICES", {"--gpus", "1", "--priority", "high"});
  ASSERT_EQ(h.gpuq({"wait", std::to_string(low), std::to_string(high), "--timeout", "60s"}).status, 0)
      << h.show(low).dump(2);

  auto job = h.show(low);
  ASSERT_EQ(job["runs"].size(), 2u) << job.dump(2);
  EXPECT_EQ(job["runs"][0]["outcome"], "preempted");
  EXPECT_EQ(job["runs"][0]["exit_code"], 75);
  EXPECT_EQ(job["runs"][0]["preempted_by"], high);
  EXPECT_EQ(job["runs"][1]["outcome"], "succeeded");
  std::string first = log_of(h, low, 1), second = log_of(h, low, 2);
  EXPECT_NE(first.find("yielding at unit 6\n"), std::string::npos) << first;
  EXPECT_NE(second.find("resumed at unit 6 (run 2)\n"), std::string::npos) << second;
  EXPECT_NE(second.find("done: 20 units"), std::string::npos) << second;
  // Every unit ran exactly once over the two runs.
  std::multiset<int> units;
  for (const std::string& log : {first, second}) {
    std::istringstream lines(log);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind("unit ", 0) == 0) units.insert(std::stoi(line.substr(5)));
    }
  }
  for (int u = 1; u <= 20; ++u) EXPECT_EQ(units.count(u), 1u) << "unit " << u;
  EXPECT_EQ(units.size(), 20u);

  auto events = h.events();
  int requested = position(events, "job.preempt_requested", low, 1);
  int preempted = position(events, "job.preempted", low, 1);
  int high_started = position(events, "job.started", high);
  int high_done = position(events, "job.succeeded", high);
  int resumed = position(events, "job.resumed", low, 2);
  int low_done = position(events, "job.succeeded", low);
  ASSERT_GE(requested, 0);
  EXPECT_LT(requested, preempted);
  EXPECT_LT(preempted, high_started);
  EXPECT_LT(high_started, high_done);
  EXPECT_LT(high_done, resumed);
  EXPECT_LT(resumed, low_done);
  EXPECT_EQ(events[requested]["data"]["by"], high);
  EXPECT_EQ(events[preempted]["data"]["by"], high);
  EXPECT_EQ(events[preempted]["data"]["how"], "yielded");
}

TEST(Preemption, PythonExampleYields) {
  if (std::system("python3 -c 'pass' 2>/dev/null") != 0) GTEST_SKIP() << "no python3";
  Harness h("fake:1");
  configure(h);
  h.start();
  setenv("COUNT_UNIT_SECONDS", "0.3", 1);
  int64_t low = h.gpuq_json({"submit", "--json", "--gpus", "1", "--priority", "low",
                             std::string(GPUQ_EXAMPLES_DIR) + "/checkpoint/count.py", "8"})
                    .value("id", int64_t{0});
  unsetenv("COUNT_UNIT_SECONDS");
  ASSERT_TRUE(wait_until([&] { return log_of(h, low, 1).find("unit 2\n") != std::string::npos; }));
  int64_t high = h.submit_sh("true", {"--gpus", "1", "--priority", "high"});
  ASSERT_EQ(h.gpuq({"wait", std::to_string(low), std::to_string(high), "--timeout", "60s"}).status, 0);
  auto job = h.show(low);
  ASSERT_EQ(job["runs"].size(), 2u) << job.dump(2);
  EXPECT_EQ(job["runs"][0]["outcome"], "preempted");
  std::string second = log_of(h, low, 2);
  EXPECT_NE(second.find("resumed at unit"), std::string::npos) << second;
  EXPECT_NE(second.find("done: 8 units"), std::string::npos) << second;
}

TEST(Preemption, RestartMode) {
  Harness h("fake:1");
  configure(h, "[runs]\nkill_grace = \"1s\"\n");
  h.start();
  int64_t low = h.submit_sh("echo run $GPUQ_RUN_NUMBER resume $GPUQ_RESUME; "
                            "if [ \"$GPUQ_RUN_NUMBER\" = 1 ]; then sleep 300; fi",
                            {"--gpus", "1", "--priority", "low", "--preempt", "restart"});
  ASSERT_TRUE(h.wait_for(low, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  int64_t high = h.submit_sh("true", {"--gpus", "1", "--priority", "high"});
  ASSERT_EQ(h.gpuq({"wait", std::to_string(low), std::to_string(high), "--timeout", "60s"}).status, 0);
  auto job = h.show(low);
  ASSERT_EQ(job["runs"].size(), 2u) << job.dump(2);
  EXPECT_EQ(job["runs"][0]["outcome"], "preempted");
  EXPECT_EQ(job["runs"][0]["signal"], 15);
  EXPECT_EQ(job["runs"][1]["outcome"], "succeeded");
  EXPECT_EQ(log_of(h, low, 2), "run 2 resume 0\n");
  auto events = h.events();
  int preempted = position(events, "job.preempted", low, 1);
  ASSERT_GE(preempted, 0);
  EXPECT_EQ(events[preempted]["data"]["how"], "stopped");
  EXPECT_EQ(events[preempted]["data"]["mode"], "restart");
  EXPECT_LT(preempted, position(events, "job.started", high));
  EXPECT_EQ(position(events, "job.resumed", low), -1) << "a restart is not a resume";
}

TEST(Preemption, NeverMode) {
  Harness h("fake:1");
  configure(h);
  h.start();
  int64_t low = h.submit_sh("while [ ! -e go ]; do sleep 0.02; done",
                            {"--gpus", "1", "--priority", "low", "--preempt", "never"});
  ASSERT_TRUE(h.wait_for(low, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  int64_t high = h.submit_sh("true", {"--gpus", "1", "--priority", "high"});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(h.show(high)["state"], "pending");
  EXPECT_EQ(h.show(low)["state"], "running");
  h.touch("go");
  ASSERT_EQ(h.gpuq({"wait", std::to_string(low), std::to_string(high), "--timeout", "30s"}).status, 0);
  EXPECT_EQ(h.show(low)["runs"].size(), 1u);
  EXPECT_FALSE(any_event(h, "job.preempt_requested"));
}

TEST(Preemption, RestartWindow) {
  Harness h("fake:2");
  configure(h, "[runs]\nkill_grace = \"1s\"\n");
  h.start();
  // The older run may be restarted for an hour; the younger one only in its first second.
  int64_t open = h.submit_sh("[ \"$GPUQ_RUN_NUMBER\" = 1 ] && sleep 300; true",
                             {"--gpus", "1", "--priority", "low", "--preempt", "restart", "--restart-within", "1h"});
  ASSERT_TRUE(h.wait_for(open, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  int64_t closed = h.submit_sh("while [ ! -e go ]; do sleep 0.02; done",
                               {"--gpus", "1", "--priority", "low", "--preempt", "restart", "--restart-within", "1s"});
  ASSERT_TRUE(h.wait_for(closed, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  int64_t high = h.submit_sh("true", {"--gpus", "1", "--priority", "high"});
  ASSERT_EQ(h.gpuq({"wait", std::to_string(high), "--timeout", "30s"}).status, 0);
  // The youngest run is the cheapest victim, but its window had closed.
  EXPECT_EQ(h.show(open)["runs"][0]["outcome"], "preempted");
  EXPECT_EQ(h.show(closed)["state"], "running");
  EXPECT_EQ(h.show(closed)["runs"].size(), 1u);
  h.touch("go");
  ASSERT_EQ(h.gpuq({"wait", std::to_string(open), std::to_string(closed), "--timeout", "30s"}).status, 0);
}

TEST(Preemption, DeadlineStops) {
  Harness h("fake:1");
  configure(h, "[preemption]\nyield_grace = \"500ms\"\n[runs]\nkill_grace = \"500ms\"\n");
  h.start();
  int64_t low = h.submit_sh("if [ \"$GPUQ_RESUME\" = 1 ]; then echo resumed; exit 0; fi; "
                            "trap '' TERM; while :; do sleep 0.05; done",
                            {"--gpus", "1", "--priority", "low", "--preempt", "yield"});
  ASSERT_TRUE(h.wait_for(low, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  int64_t high = h.submit_sh("true", {"--gpus", "1", "--priority", "high"});
  ASSERT_EQ(h.gpuq({"wait", std::to_string(low), std::to_string(high), "--timeout", "60s"}).status, 0)
      << h.show(low).dump(2);
  auto job = h.show(low);
  ASSERT_EQ(job["runs"].size(), 2u);
  EXPECT_EQ(job["runs"][0]["outcome"], "preempted");
  EXPECT_EQ(job["runs"][0]["signal"], 9) << "it ignored SIGTERM, so SIGKILL ended it";
  EXPECT_EQ(log_of(h, low, 2), "resumed\n");
  auto events = h.events();
  int preempted = position(events, "job.preempted", low, 1);
  ASSERT_GE(preempted, 0);
  EXPECT_EQ(events[preempted]["data"]["how"], "stopped");
  EXPECT_EQ(position(events, "job.failed", low), -1);
}

TEST(Preemption, NaturalExitWins) {
  Harness h("fake:1");
  configure(h, "[preemption]\nyield_grace = \"30s\"\n");
  h.start();
  // Asked to yield, it finishes its work instead and exits 0.
  int64_t low = h.submit_sh("while [ ! -e \"$GPUQ_YIELD_FILE\" ]; do sleep 0.02; done; echo finished",
                            {"--gpus", "1", "--priority", "low", "--preempt", "yield"});
  ASSERT_TRUE(h.wait_for(low, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  int64_t high = h.submit_sh("true", {"--gpus", "1", "--priority", "high"});
  ASSERT_EQ(h.gpuq({"wait", std::to_string(low), std::to_string(high), "--timeout", "30s"}).status, 0);
  auto job = h.show(low);
  EXPECT_EQ(job["state"], "succeeded");
  ASSERT_EQ(job["runs"].size(), 1u);
  EXPECT_EQ(job["runs"][0]["outcome"], "succeeded");
  EXPECT_EQ(log_of(h, low, 1), "finished\n");
  EXPECT_FALSE(any_event(h, "job.preempted"));
}

TEST(Preemption, CancelWithdraws) {
  Harness h("fake:1");
  configure(h, "[preemption]\nyield_grace = \"60s\"\n");
  h.start();
  int64_t low = h.submit_sh("while [ ! -e go ]; do sleep 0.02; done; "
                            "if [ -e \"$GPUQ_YIELD_FILE\" ]; then echo still asked; fi; echo done",
                            {"--gpus", "1", "--priority", "low", "--preempt", "yield"});
  ASSERT_TRUE(h.wait_for(low, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  int64_t high = h.submit_sh("true", {"--gpus", "1", "--priority", "high"});
  ASSERT_TRUE(wait_until([&] { return any_event(h, "job.preempt_requested"); }));
  ASSERT_EQ(h.gpuq({"cancel", std::to_string(high)}).status, 0);
  ASSERT_TRUE(wait_until([&] { return any_event(h, "job.preemption_withdrawn"); }));
  h.touch("go");
  ASSERT_EQ(h.gpuq({"wait", std::to_string(low), "--timeout", "30s"}).status, 0);
  auto job = h.show(low);
  ASSERT_EQ(job["runs"].size(), 1u);
  EXPECT_EQ(job["runs"][0]["outcome"], "succeeded");
  EXPECT_EQ(log_of(h, low, 1), "done\n") << "the yield file is removed when the request is withdrawn";
  EXPECT_FALSE(any_event(h, "job.preempted"));
}

TEST(Preemption, SmallGapNothing) {
  Harness h("fake:1");
  configure(h);
  h.start();
  int64_t normal = h.submit_sh("while [ ! -e go ]; do sleep 0.02; done",
                               {"--gpus", "1", "--priority", "normal", "--preempt", "yield"});
  ASSERT_TRUE(h.wait_for(normal, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  int64_t better = h.submit_sh("true", {"--gpus", "1", "--priority", "20"});  // better by 30 < 40
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_FALSE(any_event(h, "job.preempt_requested"));
  h.touch("go");
  ASSERT_EQ(h.gpuq({"wait", std::to_string(normal), std::to_string(better), "--timeout", "30s"}).status, 0);
}

TEST(Preemption, OneVictimIsEnoughForOneGpu) {
  Harness h("fake:2");
  configure(h, "[preemption]\nyield_grace = \"60s\"\n");
  h.start();
  std::vector<int64_t> low;
  for (int i = 0; i < 2; ++i) {
    low.push_back(h.submit_sh("while [ ! -e \"$GPUQ_YIELD_FILE\" ] && [ ! -e go ]; do sleep 0.02; done; "
                              "[ -e \"$GPUQ_YIELD_FILE\" ] && exit 75; true",
                              {"--gpus", "1", "--priority", "low", "--preempt", "yield"}));
    ASSERT_TRUE(h.wait_for(low.back(), [](const nlohmann::json& j) { return j["state"] == "running"; }));
  }
  int64_t high = h.submit_sh("true", {"--gpus", "1", "--priority", "high"});
  ASSERT_EQ(h.gpuq({"wait", std::to_string(high), "--timeout", "30s"}).status, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  int requests = 0;
  for (const auto& e : h.events()) requests += e["kind"] == "job.preempt_requested";
  EXPECT_EQ(requests, 1) << "the victim's GPU, still being cleaned up, is promised to the better job";
  h.touch("go");
  ASSERT_EQ(h.gpuq({"wait", std::to_string(low[0]), std::to_string(low[1]), "--timeout", "30s"}).status, 0);
}

TEST(Preemption, FifoNeverPreempts) {
  Harness h("fake:1");
  configure(h, "[scheduler]\npolicy = \"fifo\"\n");
  h.start();
  int64_t low = h.submit_sh("while [ ! -e go ]; do sleep 0.02; done",
                            {"--gpus", "1", "--priority", "low", "--preempt", "yield"});
  ASSERT_TRUE(h.wait_for(low, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  int64_t high = h.submit_sh("true", {"--gpus", "1", "--priority", "high"});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_FALSE(any_event(h, "job.preempt_requested")) << "under fifo a preempted job is first in line again";
  h.touch("go");
  ASSERT_EQ(h.gpuq({"wait", std::to_string(low), std::to_string(high), "--timeout", "30s"}).status, 0);
}

}  // namespace
}  // namespace gpuq::testing
