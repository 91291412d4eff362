// SPDX-License-Identifier: Apache-2.0
#include "sim/plan_jobs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuq::sim {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

TEST(PlanJobs, SubmitRequestsBecomeSimJobs) {
  json plan = json::parse(R"({
    "jobs": [
      {"name": "train", "argv": ["python", "train.py"], "gpus": 2, "priority": "high", "est": "3h"},
      {"name": "eval", "script": {"text": "#!/bin/sh\n"}, "gpus": 1, "after": ["train"], "est_ms": 60000,
       "lanes": ["net"], "requires": ["test -f x"]},
      {"name": "report", "gpus": 0, "est_hours": 0.5,
       "deps": [{"kind": "afterany", "target": "eval"}, {"kind": "file", "target": "out.json"}]},
      {"name": "probe", "gpus": 1, "est": "1m", "gpu_mem": 4096, "share": true}
    ],
    "reservations": [{"name": "evals", "gpus": [1], "jobs": ["eval"]}]
  })");
  auto jobs = jobs_from_plan(plan);
  ASSERT_TRUE(jobs) << jobs.error().message;
  ASSERT_EQ(jobs->size(), 4u);
  const SimJob& train = (*jobs)[0];
  EXPECT_EQ(train.gpus, 2);
  EXPECT_EQ(train.priority, 10);
  EXPECT_EQ(train.estimate_ms, 3 * 3600 * 1000);
  EXPECT_EQ(train.duration_ms, train.estimate_ms);
  EXPECT_EQ(train.submit_ms, 0);
  const SimJob& eval = (*jobs)[1];
  EXPECT_EQ(eval.after, std::vector<std::string>{"train"});
  EXPECT_EQ(eval.lanes, std::vector<std::string>{"net"});
  EXPECT_EQ(eval.reservation, "evals");
  const SimJob& report = (*jobs)[2];
  EXPECT_EQ(report.gpus, 0);
  EXPECT_EQ(report.estimate_ms, 1800 * 1000);
  EXPECT_EQ(report.after_any, std::vector<std::string>{"eval"});
  EXPECT_TRUE(report.after.empty());
  EXPECT_TRUE((*jobs)[3].share);
  EXPECT_EQ((*jobs)[3].gpu_mem_mib, 4096);

  auto reservations = reservations_from_plan(plan);
  ASSERT_TRUE(reservations) << reservations.error().message;
  ASSERT_EQ(reservations->size(), 1u);
  EXPECT_EQ((*reservations)[0].name, "evals");
  EXPECT_EQ((*reservations)[0].slots, std::vector<int>{1});
}

TEST(PlanJobs, AJobWithStepsOrAnImageRunsForTheJobsEstimate) {
  json plan = json::parse(R"({"jobs": [
      {"name": "pipe", "gpus": 2, "est": "2h", "image": "busybox",
       "steps": [{"argv": ["prep"]}, {"argv": ["train"], "timeout": "1h", "image": "ubuntu:24.04"}]},
      {"name": "after", "est": "1h", "after": ["pipe"]}]})");
  auto jobs = jobs_from_plan(plan);
  ASSERT_TRUE(jobs) << jobs.error().message;
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].gpus, 2);
  EXPECT_EQ((*jobs)[0].duration_ms, 2 * 3600 * 1000);
  EXPECT_EQ((*jobs)[1].after, std::vector<std::string>{"pipe"});
}

TEST(PlanJobs, Errors) {
  struct Case {
    const char* plan;
    const char* message;
  } cases[] = {
      {R"({"jobs": [{"name": "x", "gpus": 1}]})",
       "job x has no estimate (est_hours or est): a simulation needs one"},
      {R"({"jobs": [{"name": "x", "gpus": 1, "est": "soon"}]})", "job x: field 'est'"},
      {R"({"jobs": [{"name": "x", "gpus": 1, "est": "1h", "colour": "red"}]})",
       "job x: unknown field 'colour'"},
      {R"({"jobs": [{"name": "x", "est": "1h", "after_notok": ["y"]}]})",
       "job x waits for y to fail"},
      {R"({"jobs": [{"name": "x", "est_hours": "2"}]})", "job x: 'est_hours' must be a number"},
      {R"({"jobs": [{"name": "x", "est_hours": 2, "est": "2h"}]})",
       "give one of 'est_hours', 'est' or 'est_ms'"},
      {R"({"jobs": [{"gpus": 1, "est": "1h"}]})", "jobs[0] has no name"},
      {R"({"jobs": [3]})", "jobs[0] must be an object"},
      {R"([{"name": "x"}])", "a plan request is"},
      {R"({"jobs": [], "reservations": [{"name": "r"}]})",
       "reservation 'r': 'gpus' must be a list"},
      {R"({"jobs": [{"name": "x", "est": "1h", "reservation": "a"}],
           "reservations": [{"name": "b", "gpus": [0], "jobs": ["x"]}]})",
       "job x names reservation 'a' but is listed in reservation 'b'"},
  };
  for (const Case& c : cases) {
    auto jobs = jobs_from_plan(json::parse(c.plan));
    ASSERT_FALSE(jobs) << c.plan;
    EXPECT_EQ(jobs.error().code, Code::kInvalidArgument);
    EXPECT_THAT(jobs.error().message, HasSubstr(c.message)) << c.plan;
  }
}

TEST(PlanJobs, PlanRunsInTheSimulator) {
  json plan = json::parse(R"({"jobs": [
      {"name": "a", "gpus": 1, "est": "1h"},
      {"name": "b", "gpus": 1, "est": "2h", "after": ["a"]},
      {"name": "c", "gpus": 1, "est": "30m"}]})");
  auto jobs = jobs_from_plan(plan);
  ASSERT_TRUE(jobs) << jobs.error().message;
  SimMachine m;
  m.gpus = 1;
  auto r = simulate(*jobs, m, sched::Policy::kBackfill);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->makespan_ms, int64_t{210} * 60 * 1000);
}

}  // namespace
}  // namespace gpuq::sim
