// SPDX-License-Identifier: Apache-2.0
// Job arrays inside plans in the queue actor (queue_plan.cc, queue_plan_arrays.cc): an array job
// queued as an array in the plan's transaction, dependencies on it expanded to its elements,
// its cap, idempotent and conflicting resubmits, and cycles through it.
#include <fmt/format.h>
#include <gmock/gmock.h>

#include "daemon/queue_test_support.h"

namespace gpuq::daemon::testing {
namespace {

class PlanSweepQueueTest : public QueueTest {
 protected:
  static JobSpec named(const std::string& name, JobSpec spec) {
    spec.name = name;
    spec.source = "plan.json:1";
    return spec;
  }
  static PlanSweep array(const std::string& text, const std::string& json) {
    auto sweep = spec::parse_array(text);
    EXPECT_TRUE(sweep) << sweep.error().message;
    return PlanSweep{sweep ? *sweep : spec::Sweep{}, json};
  }
  // shards: 0-3 capped at 2; report: after shards; one: after shards[1].
  PlanRequest plan(const std::string& shard_command = "echo shard {i}") {
    PlanRequest request;
    request.jobs.push_back(named("shards", command(shard_command)));
    JobSpec report = named("report", command("echo report", 0));
    report.deps = {Dependency{Dependency::Kind::kAfterOk, "shards", 0}};
    request.jobs.push_back(report);
    JobSpec one = named("one", command("echo one", 0));
    one.deps = {Dependency{Dependency::Kind::kAfterOk, "shards[1]", 0}};
    request.jobs.push_back(one);
    request.sweeps = {array("0-3%2", R"({"array":"0-3","max_running":2})"), std::nullopt,
                      std::nullopt};
    return request;
  }
  Result<PlanOutcome> submit_plan(PlanRequest request) {
    auto outcome = queue_->submit_plan(std::move(request));
    world_->run();
    return outcome;
  }
  // How many of `ids` are running, and the first of them (0: none).
  std::pair<size_t, int64_t> running(const std::vector<int64_t>& ids) {
    auto is_running = [&](int64_t id) { return state(id) == JobState::kRunning; };
    auto first = std::find_if(ids.begin(), ids.end(), is_running);
    return {std::count_if(ids.begin(), ids.end(), is_running), first == ids.end() ? 0 : *first};
  }
};

TEST_F(PlanSweepQueueTest, APlansArrayIsQueuedAsAnArrayAndItsDependentWaitsForEveryElement) {
  start("fake:4");
  auto outcome = submit_plan(plan());
  ASSERT_TRUE(outcome) << outcome.error().message;
  ASSERT_EQ(outcome->jobs.size(), 3u);
  const PlanOutcome::Entry& shards = outcome->jobs[0];
  ASSERT_TRUE(shards.array);
  EXPECT_EQ(shards.name, "shards");
  EXPECT_EQ(shards.id, shards.array->id);
  EXPECT_EQ(shards.result, "created");
  EXPECT_EQ(shards.array->size, 4);
  EXPECT_EQ(shards.array->max_running, 2);
  EXPECT_THAT(shards.element_names,
              ::testing::ElementsAre("shards[0]", "shards[1]", "shards[2]", "shards[3]"));
  const std::vector<int64_t>& ids = shards.element_ids;
  ASSERT_EQ(ids.size(), 4u);
  int64_t report = outcome->jobs[1].id, one = outcome->jobs[2].id;
  EXPECT_FALSE(outcome->jobs[1].array);

  auto stored = store_->find_array_by_name("shards");
  ASSERT_TRUE(stored && *stored);
  EXPECT_EQ((*stored)->sweep, R"({"array":"0-3","max_running":2})");
  EXPECT_EQ(job(ids[2]).array_id, (*stored)->id);
  EXPECT_EQ(job(ids[2]).spec.name, "shards[2]");
  EXPECT_THAT(job(ids[2]).spec.argv, ::testing::ElementsAre("sh", "-c", "echo shard 2"));
  EXPECT_EQ(job(ids[2]).spec.env.at("GPUQ_ARRAY_INDEX"), "2");
  std::vector<int64_t> report_waits_for;
  for (const Dependency& d : job(report).spec.deps) report_waits_for.push_back(d.job_id);
  EXPECT_EQ(report_waits_for, ids);
  ASSERT_EQ(job(one).spec.deps.size(), 1u);
  EXPECT_EQ(job(one).spec.deps[0].job_id, ids[1]);
  EXPECT_EQ(count("job.submitted"), 6);
  EXPECT_EQ(last_data("array.submitted"),
            (nlohmann::json{
                {"array", (*stored)->id}, {"name", "shards"}, {"size", 4}, {"max_running", 2}}));

  // Two at a time (the cap), and the report only after the last element.
  EXPECT_EQ(running(ids).first, 2u);
  for (size_t k = 0; k < ids.size(); ++k) {
    EXPECT_EQ(running(ids).first, std::min<size_t>(2, ids.size() - k)) << "on 4 free GPUs";
    EXPECT_NE(state(report), JobState::kRunning) << "after " << k << " elements";
    end_run(running(ids).second, 1, exited(0));
  }
  EXPECT_EQ(state(report), JobState::kRunning);
}

TEST_F(PlanSweepQueueTest, TheSamePlanAgainQueuesNothingAndAnswersTheSameIds) {
  start("fake:4");
  auto first = submit_plan(plan());
  ASSERT_TRUE(first) << first.error().message;
  int submitted = count("job.submitted");
  auto again = submit_plan(plan());
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(count("job.submitted"), submitted);
  EXPECT_EQ(count("array.submitted"), 1);
  ASSERT_EQ(again->jobs.size(), 3u);
  std::map<std::string, const PlanOutcome::Entry*> by_name;
  for (const auto& e : again->jobs) by_name[e.name] = &e;
  EXPECT_EQ(by_name.at("shards")->result, "existing");
  EXPECT_EQ(by_name.at("shards")->element_ids, first->jobs[0].element_ids);
  EXPECT_EQ(by_name.at("shards")->id, first->jobs[0].id);
  EXPECT_EQ(by_name.at("report")->result, "existing");
  EXPECT_EQ(by_name.at("report")->id, first->jobs[1].id);
}

TEST_F(PlanSweepQueueTest, AChangedArrayIsAConflictEvenWithReplaceAndNothingIsQueued) {
  start("fake:4");
  ASSERT_TRUE(submit_plan(plan()));
  int submitted = count("job.submitted");
  PlanRequest changed = plan("echo other {i}");
  changed.replace = true;
  auto refused = submit_plan(std::move(changed));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kConflict);
  EXPECT_THAT(refused.error().message,
              ::testing::HasSubstr("shards (array 1 has another sweep or spec; a plan does not "
                                   "replace an array: give this one another id)"));
  EXPECT_THAT(refused.error().message, ::testing::EndsWith("; give a changed array another id"));
  EXPECT_EQ(count("job.submitted"), submitted);
}

TEST_F(PlanSweepQueueTest, ACycleThroughAnArrayAndAnElementNamedTwiceAreRefused) {
  start("fake:4");
  PlanRequest cyclic = plan();
  cyclic.jobs[0].deps = {Dependency{Dependency::Kind::kAfterOk, "one", 0}};
  auto refused = submit_plan(std::move(cyclic));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message,
            "the plan's dependencies form a cycle: shards -> one -> shards");

  PlanRequest clash = plan();
  clash.jobs[2].name = "shards[3]";
  auto refused_clash = submit_plan(std::move(clash));
  ASSERT_FALSE(refused_clash);
  EXPECT_EQ(refused_clash.error().message,
            "plan.json:1: job 'shards[3]' of the plan has the name of an element of array "
            "'shards'; rename it");
  EXPECT_EQ(count("job.submitted"), 0);
}

// As for a sweep: an element's row keeps its own variables, the shared environment is the
// array's, and the element read back has both.
TEST_F(PlanSweepQueueTest, APlansArrayKeepsItsSharedEnvironmentOnce) {
  start("fake:4");
  PlanRequest request = plan();
  request.jobs[0].env = {{"SHARED", "yes"}};
  auto outcome = submit_plan(std::move(request));
  ASSERT_TRUE(outcome) << outcome.error().message;
  int64_t second = outcome->jobs[0].element_ids.at(1);
  auto db = store::Database::open((dir_ / "gpuq.db").string(), true);
  ASSERT_TRUE(db);
  auto row = (*db)->prepare("SELECT COALESCE(NULLIF(spec, ''), (SELECT spec FROM job_specs WHERE job_specs.id = jobs.id)) FROM jobs WHERE id = ?");
  ASSERT_TRUE(row);
  row->bind(1, second);
  auto found = row->step();
  ASSERT_TRUE(found && *found);
  EXPECT_EQ(row->text(0).find("SHARED"), std::string::npos) << row->text(0);
  EXPECT_EQ(job(second).spec.env,
            (std::map<std::string, std::string>{{"SHARED", "yes"}, {"GPUQ_ARRAY_INDEX", "1"}}));
}

}  // namespace
}  // namespace gpuq::daemon::testing
