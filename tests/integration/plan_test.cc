// Plans end to end: submitted whole, idempotent when submitted again, conflicts refused.
#include <fstream>
#include <gtest/gtest.h>

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
