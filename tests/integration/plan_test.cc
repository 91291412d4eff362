// SPDX-License-Identifier: Apache-2.0
// Plans end to end: submitted whole, idempotent when submitted again, conflicts refused.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "harness.h"

namespace gpuq::testing {
namespace {

void write_plan(const Harness& h, const std::string& eval_body) {
  std::ofstream(h.path("prep.sh")) << "#!/bin/bash\necho prep > data.txt\n";
  std::ofstream(h.path("train.sh")) << "#!/bin/bash\n#gpuq gpus=1\necho train; cat data.txt\n";
  std::ofstream(h.path("eval.sh")) << "#!/bin/bash\n" << eval_body;
  std::ofstream(h.path("plan.json")) << R"({
  "jobs": [
    {"id": "prep", "script": "prep.sh", "gpus": 0, "priority": 50, "deps": [], "est_hours": 0.01},
    {"id": "train", "script": "train.sh", "gpus": 1, "priority": 50, "deps": ["prep"], "est_hours": 0.02},
    {"id": "eval", "script": "eval.sh", "gpus": 1, "priority": 10, "deps": ["train", "file:data.txt"], "est_hours": 0.01}
  ]
})";
}

TEST(Plans, SubmittedTwiceIsIdempotentAndAChangeIsAConflict) {
  Harness h("fake:1");
  h.start();
  write_plan(h, "echo eval\n");
  auto first = h.gpuq({"submit", "plan.json"});
  ASSERT_EQ(first.status, 0) << first.err;
  ASSERT_EQ(h.gpuq({"wait", "prep", "train", "eval", "--timeout", "60s"}).status, 0);
  EXPECT_EQ(h.gpuq({"logs", "train"}).out, "train\nprep\n");
  auto again = h.gpuq({"submit", "plan.json"});
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.out.find("existing"), std::string::npos) << again.out;
  EXPECT_EQ(h.gpuq_json({"status", "--json"})["jobs"].size(), 3u);
  // A changed job is a conflict, and nothing of the plan is queued.
  write_plan(h, "echo eval v2\n");
  auto changed = h.gpuq({"submit", "plan.json"});
  EXPECT_NE(changed.status, 0);
  EXPECT_NE(changed.err.find("eval"), std::string::npos) << changed.err;
  EXPECT_EQ(h.gpuq_json({"status", "--json"})["jobs"].size(), 3u);
  auto replaced = h.gpuq({"submit", "plan.json", "--replace"});
  ASSERT_EQ(replaced.status, 0) << replaced.err;
  EXPECT_NE(replaced.out.find("replaced"), std::string::npos) << replaced.out;
  ASSERT_EQ(h.gpuq({"wait", "eval", "--timeout", "60s"}).status, 0);
  EXPECT_EQ(h.gpuq({"logs", "eval"}).out, "eval v2\n");
}

// A plan as the queue people move from writes it, fields and forms as that queue reads them:
// no "gpus" is one GPU, "~" and "$VAR" in paths, a script with its arguments, TDPRM_GPU0 in the
// run, and the simulator's fields (produced_by, produced_at_frac, first_look_frac), which
// `gpuq simulate` uses and the daemon is not sent.
TEST(Plans, APlanOfTheQueuePeopleMoveFromRunsAsWritten) {
  Harness h("fake:2");
  h.start();
  std::filesystem::create_directories(h.path("exp"));
  std::ofstream(h.path("exp/fetch.sh")) << "#!/bin/bash\necho fetched > data.txt\n";
  std::ofstream(h.path("exp/train.sh"))
      << "#!/bin/bash\necho \"gpu0=$TDPRM_GPU0 cuda=$CUDA_VISIBLE_DEVICES args=$*\"\n"
         "mkdir -p ckpt; for i in $(seq \"$2\"); do touch ckpt/step-$i.pt; done\n";
  std::ofstream(h.path("exp/eval.sh")) << "#!/bin/bash\necho \"gpu0=$TDPRM_GPU0\"; ls ckpt\n";
  std::ofstream(h.path("plan.json")) << R"({"jobs": [
  {"id": "fetch", "script": "$EXP/fetch.sh", "gpus": 0, "priority": 50, "deps": [], "est_hours": 0.001},
  {"id": "train", "script": "~/exp/train.sh --steps 2", "priority": 50, "deps": ["fetch"],
   "est_hours": 0.002, "first_look_frac": 0.25},
  {"id": "eval", "script": "~/exp/eval.sh", "priority": 10, "deps": ["file:ckpt/step-2.pt"],
   "est_hours": 0.001, "produced_by": "train", "produced_at_frac": 0.5}
 ],
 "reservations": [{"gpus": [1], "jobs": ["eval"]}]})";
  const std::string home = getenv("HOME") ? getenv("HOME") : "";
  setenv("HOME", h.work().c_str(), 1);  // for the gpuq commands below: ~ is the work directory
  setenv("EXP", h.path("exp").c_str(), 1);
  auto simulated = h.gpuq({"simulate", "plan.json", "--gpus", "2", "--json"});
  auto submitted = h.gpuq({"submit", "plan.json"});
  setenv("HOME", home.c_str(), 1);
  unsetenv("EXP");

  ASSERT_EQ(simulated.status, 0) << simulated.err;
  auto sim = nlohmann::json::parse(simulated.out);
  ASSERT_EQ(sim["jobs"].size(), 3u) << sim.dump();
  EXPECT_EQ(sim["jobs"][1]["start_s"], 3.6);              // after fetch's 0.001 h
  EXPECT_EQ(sim["jobs"][1]["first_look_s"], 3.6 + 1.8);   // a quarter of train's 7.2 s
  EXPECT_EQ(sim["jobs"][2]["start_s"], 3.6 + 3.6);        // half way through train
  EXPECT_EQ(sim["jobs"][2]["gpus"], nlohmann::json::array({1}));

  ASSERT_EQ(submitted.status, 0) << submitted.err;
  ASSERT_EQ(h.gpuq({"wait", "fetch", "train", "eval", "--timeout", "60s"}).status, 0);
  EXPECT_EQ(h.show_ref("train")["gpus_requested"], 1);
  EXPECT_EQ(h.show_ref("fetch")["gpus_requested"], 0);
  EXPECT_EQ(h.gpuq({"logs", "train"}).out, "gpu0=0 cuda=0 args=--steps 2\n");
  EXPECT_EQ(h.gpuq({"logs", "eval"}).out, "gpu0=1\nstep-1.pt\nstep-2.pt\n");
  EXPECT_EQ(h.gpuq({"logs", "fetch"}).out, "");
}

TEST(Plans, AnInvalidJobQueuesNothing) {
  Harness h("fake:1");
  h.start();
  std::ofstream(h.path("ok.sh")) << "echo ok\n";
  std::ofstream(h.path("empty.sh")) << "";
  std::ofstream(h.path("plan.json")) << R"({"jobs": [
    {"id": "good", "script": "ok.sh"},
    {"id": "bad", "script": "empty.sh"}
  ]})";
  auto r = h.gpuq({"submit", "plan.json"});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("empty"), std::string::npos) << r.err;
  EXPECT_EQ(h.gpuq_json({"status", "--json"})["jobs"].size(), 0u);
}

}  // namespace
}  // namespace gpuq::testing

namespace gpuq::testing {
namespace {

TEST(Plans, AReservationKeepsItsGpusForItsJobsUntilTheyFinish) {
  Harness h("fake:2");
  h.start();
  std::ofstream(h.path("show.sh")) << "#!/bin/bash\necho \"$CUDA_VISIBLE_DEVICES\"\n";
  std::ofstream(h.path("hold.sh")) << "#!/bin/bash\nwhile [ ! -e go ]; do sleep 0.02; done\necho \"$CUDA_VISIBLE_DEVICES\"\n";
  std::ofstream(h.path("plan.json")) << R"({
  "jobs": [
    {"id": "reserved", "script": "hold.sh", "gpus": 1},
    {"id": "outside", "script": "show.sh", "gpus": 1}
  ],
  "reservations": [{"name": "pair", "gpus": [1], "jobs": ["reserved"]}]
})";
  ASSERT_EQ(h.gpuq({"submit", "plan.json"}).status, 0);
  ASSERT_EQ(h.gpuq({"wait", "outside", "--timeout", "30s"}).status, 0);
  EXPECT_EQ(h.gpuq({"logs", "outside"}).out, "0\n");
  // GPU 0 is free again and GPU 1 is the reserved job's: a new job must not take GPU 1.
  int64_t blocker = h.submit_sh("while [ ! -e go2 ]; do sleep 0.02; done", {"--gpus", "1"});
  int64_t waiter = h.submit_sh("echo \"$CUDA_VISIBLE_DEVICES\"", {"--gpus", "1"});
  ASSERT_TRUE(h.wait_for(blocker, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  EXPECT_EQ(h.show(blocker)["runs"][0]["gpus"], nlohmann::json::array({0}));
  h.wait_passes(2);  // two scheduling passes have seen the waiter and the reserved GPU 1
  EXPECT_EQ(h.show(waiter)["state"], "pending") << h.show(waiter).dump();
  h.touch("go");
  ASSERT_EQ(h.gpuq({"wait", "reserved", "--timeout", "30s"}).status, 0);
  EXPECT_EQ(h.gpuq({"logs", "reserved"}).out, "1\n");
  // With its group finished, the reservation lets GPU 1 serve everyone.
  ASSERT_EQ(h.gpuq({"wait", std::to_string(waiter), "--timeout", "30s"}).status, 0);
  EXPECT_EQ(h.gpuq({"logs", std::to_string(waiter)}).out, "1\n");
  h.touch("go2");
}

TEST(Plans, SharingJobsRunTogetherOnOneGpuWhileTheirMemoryFits) {
  Harness h("fake:1");
  h.start();
  auto sharer = [&](const std::string& tag) {
    return "touch " + tag + ".started; while [ ! -e go ]; do sleep 0.02; done";
  };
  int64_t a = h.submit_sh(sharer("a"), {"--gpus", "1", "--gpu-mem", "25000", "--share"});
  int64_t b = h.submit_sh(sharer("b"), {"--gpus", "1", "--gpu-mem", "25000", "--share"});
  int64_t c = h.submit_sh("true", {"--gpus", "1", "--gpu-mem", "25000", "--share"});
  int64_t whole = h.submit_sh("true", {"--gpus", "1"});
  auto running = [](const nlohmann::json& j) { return j["state"] == "running"; };
  ASSERT_TRUE(h.wait_for(a, running));
  ASSERT_TRUE(h.wait_for(b, running));
  // A third 25000 MiB sharer still fits in 81920 MiB; a whole-GPU job must wait.
  ASSERT_EQ(h.gpuq({"wait", std::to_string(c), "--timeout", "30s"}).status, 0);
  EXPECT_EQ(h.show(whole)["state"], "pending");
  h.touch("go");
  ASSERT_EQ(h.gpuq({"wait", std::to_string(a), std::to_string(b), std::to_string(whole), "--timeout", "30s"}).status, 0);
}

}  // namespace
}  // namespace gpuq::testing

namespace gpuq::testing {
namespace {

TEST(Plans, ReplacingAJobAlsoReplacesTheJobsThatDependOnIt) {
  Harness h("fake:1");
  h.start();
  auto plan = [&](const std::string& y_body) {
    std::ofstream(h.path("y.sh")) << "#!/bin/bash\n" << y_body;
    std::ofstream(h.path("x.sh")) << "#!/bin/bash\necho x\n";
    std::ofstream(h.path("plan.json")) << R"({"jobs": [
      {"id": "y", "script": "y.sh", "hold": true},
      {"id": "x", "script": "x.sh", "deps": ["after:y"]}
    ]})";
  };
  plan("echo y1\n");
  ASSERT_EQ(h.gpuq({"submit", "plan.json"}).status, 0);
  plan("echo y2\n");
  auto refused = h.gpuq({"submit", "plan.json"});
  EXPECT_NE(refused.status, 0);
  auto r = h.gpuq({"submit", "plan.json", "--replace"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("replaced"), std::string::npos) << r.out;
  // The new x waits for the new (held) y instead of running because the old y was cancelled.
  h.wait_passes(2);  // two scheduling passes have seen the replaced plan
  auto x = h.show_ref("x");
  auto y = h.show_ref("y");
  EXPECT_EQ(x["state"], "pending") << x.dump();
  EXPECT_TRUE(x["runs"].empty()) << x.dump();
  ASSERT_EQ(x["deps"].size(), 1u);
  EXPECT_EQ(x["deps"][0]["job"], y["id"]) << x.dump();
  EXPECT_EQ(y["state"], "held") << y.dump();
  for (const auto& e : h.events()) {
    EXPECT_NE(e["kind"], "job.started") << "nothing of the plan ran: " << e.dump();
  }
  ASSERT_EQ(h.gpuq({"release", "y"}).status, 0);
  ASSERT_EQ(h.gpuq({"wait", "x", "y", "--timeout", "30s"}).status, 0);
  EXPECT_EQ(h.gpuq({"logs", "y"}).out, "y2\n");
}

}  // namespace
}  // namespace gpuq::testing
