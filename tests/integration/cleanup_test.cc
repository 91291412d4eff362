// SPDX-License-Identifier: Apache-2.0
// A GPU serves again only after everything its last run left behind is gone.
#include <fstream>
#include <gtest/gtest.h>

#include "harness.h"

namespace gpuq::testing {
namespace {

TEST(Cleanup, ABackgroundChildIsGoneBeforeTheNextJobGetsTheGpu) {
  Harness h("fake:1");
  h.start();
  int64_t leaver = h.submit_sh("sleep 300 & echo $! > child.pid; echo started", {"--gpus", "1"});
  // The next job on the same GPU checks that the child is dead when it starts.
  int64_t checker = h.submit_sh(
      "if kill -0 $(cat child.pid) 2>/dev/null; then echo alive; exit 1; fi; echo gone", {"--gpus", "1"});
  ASSERT_EQ(h.gpuq({"wait", std::to_string(leaver), std::to_string(checker), "--timeout", "30s"}).status, 0)
      << h.show(checker).dump();
  EXPECT_EQ(h.gpuq({"logs", std::to_string(checker)}).out, "gone\n");
  bool reported = false;
  for (const auto& e : h.events()) {
    if (e["kind"] == "job.succeeded" && e["job"] == leaver) {
      reported = e["data"].value("leftovers_killed", 0) >= 1;
    }
  }
  EXPECT_TRUE(reported) << "the end event should say that leftovers were killed";
}

TEST(Cleanup, CancelStopsARunningJobAndItsGroup) {
  Harness h("fake:1");
  h.start();
  int64_t id = h.submit_sh("sleep 300 & echo $! > child.pid; sleep 300", {"--gpus", "1"});
  ASSERT_TRUE(h.wait_for(id, [&](const nlohmann::json& j) {
    std::ifstream in(h.path("child.pid"));
    return j["state"] == "running" && in.good();
  }));
  auto r = h.gpuq({"cancel", std::to_string(id)});
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(h.wait_for(id, [](const nlohmann::json& j) { return j["state"] == "cancelled"; }));
  auto job = h.show(id);
  EXPECT_EQ(job["runs"][0]["outcome"], "cancelled");
  EXPECT_EQ(job["runs"][0]["signal"], 15);
  std::ifstream in(h.path("child.pid"));
  pid_t child = 0;
  in >> child;
  ASSERT_GT(child, 0);
  EXPECT_NE(::kill(child, 0), 0);
  // The GPU is free again: a new job runs.
  int64_t next = h.submit_sh("true", {"--gpus", "1"});
  EXPECT_EQ(h.gpuq({"wait", std::to_string(next), "--timeout", "30s"}).status, 0);
  // Cancelling a finished job is refused with a reason.
  auto again = h.gpuq({"cancel", std::to_string(id)});
  EXPECT_NE(again.status, 0);
  EXPECT_NE(again.err.find("already cancelled"), std::string::npos) << again.err;
}

}  // namespace
}  // namespace gpuq::testing

namespace gpuq::testing {
namespace {

TEST(Cleanup, RunVariablesOfAnOuterJobNeverReachTheDaemonsChildren) {
  Harness h("fake:1");
  setenv("GPUQ_RUN_ID", "outer-run-marker", 1);  // as if the daemon were started inside a job
  h.start();
  unsetenv("GPUQ_RUN_ID");
  int64_t id = h.submit_sh("while [ ! -e go ]; do sleep 0.02; done");
  ASSERT_TRUE(h.wait_for(id, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  pid_t shim = 0;
  for (const auto& e : h.events()) {
    if (e["kind"] == "job.started") shim = e["data"]["pid"].get<pid_t>();
  }
  ASSERT_GT(shim, 1);
  std::ifstream in("/proc/" + std::to_string(shim) + "/environ", std::ios::binary);
  std::string environ((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(environ.empty());
  EXPECT_EQ(environ.find("outer-run-marker"), std::string::npos);
  h.touch("go");
}

}  // namespace
}  // namespace gpuq::testing
