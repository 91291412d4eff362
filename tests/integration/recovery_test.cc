// SPDX-License-Identifier: Apache-2.0
// The daemon dies (SIGKILL) while runs are alive: nothing is lost or repeated.
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>

#include "harness.h"

namespace gpuq::testing {
namespace {

auto running = [](const nlohmann::json& j) { return j["state"] == "running"; };

int count_kind(const std::vector<nlohmann::json>& events, const std::string& kind, int64_t job) {
  int n = 0;
  for (const auto& e : events) n += e["kind"] == kind && e["job"] == job;
  return n;
}

TEST(Recovery, RunsSurviveADaemonKilledWithSigkill) {
  Harness h("fake:2");
  h.start();
  std::string script = "while [ ! -e go ]; do sleep 0.02; done; echo done-$GPUQ_JOB_ID";
  int64_t a = h.submit_sh(script, {"--gpus", "1"});
  int64_t b = h.submit_sh(script, {"--gpus", "1"});
  ASSERT_TRUE(h.wait_for(a, running));
  ASSERT_TRUE(h.wait_for(b, running));
  h.kill_daemon();
  h.start();
  // Adopted, still running, GPUs still held.
  auto status = h.gpuq_json({"status", "--json"});
  for (const auto& r : status["resources"]) EXPECT_EQ(r["state"], "busy") << r.dump();
  h.touch("go");
  ASSERT_EQ(h.gpuq({"wait", std::to_string(a), std::to_string(b), "--timeout", "30s"}).status, 0);
  for (int64_t id : {a, b}) {
    auto job = h.show(id);
    EXPECT_EQ(job["state"], "succeeded");
    ASSERT_EQ(job["runs"].size(), 1u) << job.dump();
    EXPECT_EQ(job["runs"][0]["exit_code"], 0);
    auto log = h.gpuq({"logs", std::to_string(id)});
    EXPECT_EQ(log.out, "done-" + std::to_string(id) + "\n");
  }
  auto events = h.events();
  EXPECT_EQ(count_kind(events, "job.adopted", a), 1);
  EXPECT_EQ(count_kind(events, "job.started", a), 1);
}

TEST(Recovery, AnExitWhileTheDaemonIsDownKeepsItsTrueExitCode) {
  Harness h("fake:1");
  h.start();
  int64_t id = h.submit_sh("while [ ! -e go ]; do sleep 0.02; done; exit 7", {"--gpus", "1"});
  ASSERT_TRUE(h.wait_for(id, running));
  auto run_dir = h.home() + "/jobs/" + std::to_string(id) + "/run-1";
  h.kill_daemon();
  h.touch("go");
  ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(run_dir + "/exit.json"); }));
  h.start();
  auto job = h.show(id);
  EXPECT_EQ(job["state"], "failed");
  ASSERT_EQ(job["runs"].size(), 1u);
  EXPECT_EQ(job["runs"][0]["exit_code"], 7);
  EXPECT_EQ(job["runs"][0]["outcome"], "failed");
  EXPECT_EQ(h.gpuq({"wait", std::to_string(id)}).status, 1);
}

TEST(Recovery, ALostRunIsRequeuedOnceNeverDropped) {
  Harness h("fake:1");
  h.start();
  // The first run waits forever; the second (after the loss) succeeds at once, and says
  // whether the first one's process was still alive when it started.
  int64_t id = h.submit_sh(
      "if [ \"$GPUQ_RUN_NUMBER\" = 1 ]; then echo $$ > run1.pid; while :; do sleep 0.05; done; fi; "
      "p=$(cat run1.pid); if [ -e /proc/$p ] && ! grep -q '^[0-9]* ([^)]*) Z' /proc/$p/stat; then "
      "echo run 1 alive; fi; echo second",
      {"--gpus", "1"});
  ASSERT_TRUE(h.wait_for(id, running));
  int run1 = 0;
  ASSERT_TRUE(wait_until([&] { return std::ifstream(h.path("run1.pid")) >> run1 && run1 > 0; }));
  std::vector<int> of_run1 = h.run_processes(id, 1);
  ASSERT_NE(std::find(of_run1.begin(), of_run1.end(), run1), of_run1.end()) << "pid " << run1;
  // A power cut for the shim: it dies and writes nothing. Its pid is in the job.started event.
  pid_t shim = 0;
  for (const auto& e : h.events()) {
    if (e["kind"] == "job.started" && e["job"] == id) shim = e["data"]["pid"].get<pid_t>();
  }
  ASSERT_GT(shim, 1);
  h.kill_daemon();
  ASSERT_EQ(::kill(shim, SIGKILL), 0);
  // Dead before the new daemon looks (alive, it would be adopted, not lost).
  ASSERT_TRUE(wait_until([&] { return !process_alive(shim); }))
      << "shim " << shim << " outlived SIGKILL";
  // The job itself is left running, orphaned: the new daemon must kill it before rerunning.
  EXPECT_TRUE(process_alive(run1)) << "run 1's shell died with its shim";
  h.start();
  ASSERT_EQ(h.gpuq({"wait", std::to_string(id), "--timeout", "30s"}).status, 0);
  auto job = h.show(id);
  ASSERT_EQ(job["runs"].size(), 2u) << job.dump();
  EXPECT_EQ(job["runs"][0]["outcome"], "lost");
  EXPECT_EQ(job["runs"][1]["outcome"], "succeeded");
  EXPECT_EQ(h.gpuq({"logs", std::to_string(id), "--run", "2"}).out, "second\n")
      << "run 1 outlived the loss";
  EXPECT_TRUE(h.run_processes(id, 1).empty());
  auto events = h.events();
  EXPECT_EQ(count_kind(events, "job.lost", id), 1);
  EXPECT_EQ(count_kind(events, "job.requeued", id), 1);
}

}  // namespace
}  // namespace gpuq::testing

namespace gpuq::testing {
namespace {

TEST(Recovery, AManualRetryGivesAFreshRetryBudgetThatSurvivesARestart) {
  Harness h("fake:1");
  h.start();
  int64_t id = h.submit_sh(
      "if [ \"$GPUQ_RUN_NUMBER\" -ge 3 ]; then while [ ! -e go ]; do sleep 0.02; done; fi; exit 1",
      {"--retries", "1", "--retry-delay", "50ms"});
  EXPECT_EQ(h.gpuq({"wait", std::to_string(id), "--timeout", "30s"}).status, 1);
  ASSERT_EQ(h.show(id)["runs"].size(), 2u);
  ASSERT_EQ(h.gpuq({"retry", std::to_string(id)}).status, 0);
  ASSERT_TRUE(h.wait_for(id, running));
  h.stop();
  h.start();
  h.touch("go");
  EXPECT_EQ(h.gpuq({"wait", std::to_string(id), "--timeout", "30s"}).status, 1);
  // Run 3 failed and, with the budget the retry gave, was retried once more as run 4.
  EXPECT_EQ(h.show(id)["runs"].size(), 4u) << h.show(id).dump();
}

}  // namespace
}  // namespace gpuq::testing
