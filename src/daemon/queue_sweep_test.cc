// SPDX-License-Identifier: Apache-2.0
// Job arrays and grids in the queue actor (queue_sweep.cc): the elements, what each run sees,
// the cap on running elements (also across a restart), idempotent and conflicting submits.
#include <fmt/format.h>
#include <gmock/gmock.h>

#include "daemon/queue_test_support.h"

namespace gpuq::daemon::testing {
namespace {

using ::testing::ElementsAre;

class SweepQueueTest : public QueueTest {
 protected:
  Result<SweepSubmitted> submit_sweep(JobSpec base, const spec::Sweep& sweep, std::string json) {
    auto submitted = queue_->submit_sweep(SweepRequest{std::move(base), sweep, std::move(json)});
    world_->run();
    return submitted;
  }
  // The elements that are running now.
  std::vector<int64_t> running(const std::vector<int64_t>& ids) {
    std::vector<int64_t> out;
    for (int64_t id : ids) {
      if (state(id) == JobState::kRunning) out.push_back(id);
    }
    return out;
  }
  const runner::RunSpec& run_spec(int64_t job_id) { return world_->run_specs().at(run_dir(job_id, 1)); }
};

TEST_F(SweepQueueTest, AnArrayOfTwentyCappedAtTwoNeverRunsMoreThanTwoAndEachSeesItsIndex) {
  start("fake:4");
  JobSpec base = command("echo shard {i}");
  base.name = "shards";
  auto sweep = spec::parse_array("0-19%2");
  ASSERT_TRUE(sweep);
  auto submitted = submit_sweep(base, *sweep, R"({"array":"0-19%2"})");
  ASSERT_TRUE(submitted) << submitted.error().message;
  const std::vector<int64_t>& ids = submitted->element_ids;
  ASSERT_EQ(ids.size(), 20u);
  EXPECT_EQ(submitted->array.name, "shards");
  EXPECT_EQ(submitted->array.max_running, 2);
  EXPECT_EQ(job(ids[7]).spec.name, "shards[7]");
  EXPECT_EQ(job(ids[7]).array_id, submitted->array.id);

  std::vector<int64_t> seen;
  for (size_t finished = 0; finished < ids.size();) {
    std::vector<int64_t> now = running(ids);
    ASSERT_EQ(now.size(), std::min<size_t>(2, ids.size() - finished))
        << "after " << finished << " finished, on 4 free GPUs";
    int64_t first = now.front();
    size_t index = static_cast<size_t>(std::find(ids.begin(), ids.end(), first) - ids.begin());
    const runner::RunSpec& spec = run_spec(first);
    EXPECT_THAT(spec.argv, ElementsAre("sh", "-c", "echo shard " + std::to_string(index)));
    EXPECT_EQ(spec.env.at("GPUQ_ARRAY_INDEX"), std::to_string(index));
    EXPECT_EQ(spec.env.at("GPUQ_ARRAY_ID"), std::to_string(submitted->array.id));
    EXPECT_EQ(spec.env.at("GPUQ_JOB_NAME"), "shards[" + std::to_string(index) + "]");
    seen.push_back(first);
    end_run(first, 1, exited(0));
    ++finished;
  }
  for (int64_t id : ids) EXPECT_EQ(state(id), JobState::kSucceeded);
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, ids);
  EXPECT_EQ(count("job.submitted"), 20);
  EXPECT_EQ(last_data("array.submitted"),
            (nlohmann::json{{"array", submitted->array.id}, {"name", "shards"}, {"size", 20},
                            {"max_running", 2}}));
}

TEST_F(SweepQueueTest, GridElementsSeeTheirParametersInArgumentsAndVariables) {
  start("fake:4");
  JobSpec base = command("train --lr={lr} --seed={seed} --run={i} ${i}", 0);
  base.name = "grid";
  auto lr = spec::parse_grid_param("lr=1e-4,3e-4");
  auto seed = spec::parse_grid_param("seed=0..1");
  ASSERT_TRUE(lr && seed);
  auto sweep = spec::make_grid({*lr, *seed});
  ASSERT_TRUE(sweep);
  auto submitted = submit_sweep(base, *sweep, R"({"grid":["lr=1e-4,3e-4","seed=0..1"]})");
  ASSERT_TRUE(submitted) << submitted.error().message;
  ASSERT_EQ(submitted->element_ids.size(), 4u);
  int64_t third = submitted->element_ids[2];
  EXPECT_EQ(job(third).spec.name, "grid[lr=3e-4,seed=0]");
  EXPECT_EQ(state(third), JobState::kRunning) << "no cap, no GPUs needed: all run";
  const runner::RunSpec& spec = run_spec(third);
  EXPECT_THAT(spec.argv, ElementsAre("sh", "-c", "train --lr=3e-4 --seed=0 --run=2 ${i}"));
  EXPECT_EQ(spec.env.at("GPUQ_PARAM_LR"), "3e-4");
  EXPECT_EQ(spec.env.at("GPUQ_PARAM_SEED"), "0");
  EXPECT_EQ(spec.env.at("GPUQ_ARRAY_INDEX"), "2");
}

// The environment every element shares is kept once, with the array: an element's row holds
// only its own variables, and every read of the element (its runs, show) has the whole.
TEST_F(SweepQueueTest, TheSharedEnvironmentIsKeptOnceAndEveryElementRunsWithIt) {
  start("fake:4");
  JobSpec base = command("true");
  base.name = "envs";
  base.env = {{"SHARED", "yes"}, {"GPUQ_ARRAY_INDEX", "from a parent array"}};
  auto sweep = spec::parse_array("0-2");
  ASSERT_TRUE(sweep);
  auto submitted = submit_sweep(base, *sweep, R"({"array":"0-2"})");
  ASSERT_TRUE(submitted) << submitted.error().message;
  int64_t second = submitted->element_ids[1];
  auto stored = store::Database::open((dir_ / "gpuq.db").string(), true);
  ASSERT_TRUE(stored);
  auto row = (*stored)->prepare("SELECT COALESCE(NULLIF(spec, ''), (SELECT spec FROM job_specs WHERE job_specs.id = jobs.id)) FROM jobs WHERE id = ?");
  ASSERT_TRUE(row);
  row->bind(1, second);
  auto found = row->step();
  ASSERT_TRUE(found && *found);
  EXPECT_EQ(row->text(0).find("SHARED"), std::string::npos) << row->text(0);
  EXPECT_NE(row->text(0).find("GPUQ_ARRAY_INDEX"), std::string::npos) << "its own variables stay";

  EXPECT_EQ(job(second).spec.env,
            (std::map<std::string, std::string>{{"SHARED", "yes"}, {"GPUQ_ARRAY_INDEX", "1"}}))
      << "the element's own variables win over the shared ones";
  EXPECT_EQ(run_spec(second).env.at("SHARED"), "yes");
  EXPECT_EQ(run_spec(second).env.at("GPUQ_ARRAY_INDEX"), "1");
}

TEST_F(SweepQueueTest, TheCapHoldsAcrossARestartAndItsLaneIsFreedWhenTheArrayEnds) {
  start("fake:4");
  JobSpec base = command("true");
  base.name = "one-at-a-time";
  auto submitted = submit_sweep(base, *spec::parse_array("0-2%1"), R"({"array":"0-2%1"})");
  ASSERT_TRUE(submitted) << submitted.error().message;
  const auto ids = submitted->element_ids;
  EXPECT_EQ(running(ids), std::vector<int64_t>{ids[0]});
  restart("fake:4");
  EXPECT_EQ(running(ids), std::vector<int64_t>{ids[0]}) << "the restarted daemon keeps the cap";
  end_run(ids[0], 1, exited(0));
  EXPECT_EQ(running(ids), std::vector<int64_t>{ids[1]});
  end_run(ids[1], 1, exited(0));
  end_run(ids[2], 1, exited(0));
  EXPECT_EQ(state(ids[2]), JobState::kSucceeded);
  // A second capped array takes the freed lane and is capped by its own number.
  JobSpec other = command("true");
  other.name = "two-at-a-time";
  auto second = submit_sweep(other, *spec::parse_array("0-3%2"), R"({"array":"0-3%2"})");
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(running(second->element_ids).size(), 2u);
}

TEST_F(SweepQueueTest, TheSameArrayAgainIsTheOneQueuedAndADifferentOneUnderItsNameIsRefused) {
  start("fake:2");
  JobSpec base = command("sleep 1", 0);
  base.name = "seeds";
  auto sweep = spec::parse_array("0-4");
  auto first = submit_sweep(base, *sweep, R"({"array":"0-4"})");
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_FALSE(first->existing);
  auto again = submit_sweep(base, *sweep, R"({"array":"0-4"})");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->existing);
  EXPECT_EQ(again->array.id, first->array.id);
  EXPECT_EQ(again->element_ids, first->element_ids);
  EXPECT_EQ(count("job.submitted"), 5) << "nothing was queued twice";

  auto wider = submit_sweep(base, *spec::parse_array("0-5"), R"({"array":"0-5"})");
  ASSERT_FALSE(wider);
  EXPECT_EQ(wider.error().message,
            fmt::format("an array named 'seeds' already exists (array {}, 5 elements) with a "
                        "different sweep or spec; choose another name",
                        first->array.id));
  JobSpec changed = base;
  changed.argv = {"sh", "-c", "sleep 2"};
  EXPECT_FALSE(submit_sweep(changed, *sweep, R"({"array":"0-4"})"));

  JobSpec plain = command("true", 0);
  plain.name = "alone";
  int64_t alone = submit(plain);
  base.name = "alone";
  auto clash = submit_sweep(base, *sweep, R"({"array":"0-4"})");
  ASSERT_FALSE(clash);
  EXPECT_EQ(clash.error().message,
            fmt::format("a job named 'alone' exists (job {}); an array needs a name that no job "
                        "has",
                        alone));
  base.name = "bad[name]";
  auto bracket = submit_sweep(base, *sweep, R"({"array":"0-4"})");
  ASSERT_FALSE(bracket);
  EXPECT_EQ(bracket.error().message.substr(0, 57),
            "array name 'bad[name]': an array's name cannot hold [ or ");
}

TEST_F(SweepQueueTest, AnArrayWithoutANameIsNamedByItsId) {
  start("fake:2");
  auto submitted = submit_sweep(command("true", 0), *spec::parse_array("1,4"), R"({"array":"1,4"})");
  ASSERT_TRUE(submitted) << submitted.error().message;
  EXPECT_EQ(submitted->array.name, fmt::format("array-{}", submitted->array.id));
  EXPECT_EQ(job(submitted->element_ids[1]).spec.name,
            fmt::format("array-{}[4]", submitted->array.id));
}

TEST_F(SweepQueueTest, AJobAfterAnArrayStartsOnlyOnceEveryElementSucceeded) {
  start("fake:4");
  JobSpec base = command("true", 0);
  base.name = "prep";
  auto array = submit_sweep(base, *spec::parse_array("0-2"), R"({"array":"0-2"})");
  ASSERT_TRUE(array) << array.error().message;
  const auto ids = array->element_ids;
  JobSpec after = command("true", 0);
  after.deps = {Dependency{Dependency::Kind::kAfterOk, "prep", 0}};
  int64_t train = submit(after);
  ASSERT_NE(train, 0);
  std::vector<Dependency> deps = job(train).spec.deps;
  ASSERT_EQ(deps.size(), 3u) << "one dependency per element";
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(deps[k].job_id, ids[k]);
    EXPECT_EQ(deps[k].target, std::to_string(ids[k]));
  }
  end_run(ids[0], 1, exited(0));
  end_run(ids[2], 1, exited(0));
  EXPECT_EQ(state(train), JobState::kPending) << "prep[1] is still running";
  end_run(ids[1], 1, exited(0));
  EXPECT_EQ(state(train), JobState::kRunning);

  JobSpec unknown = command("true", 0);
  unknown.deps = {Dependency{Dependency::Kind::kAfterAny, "nothing-by-that-name", 0}};
  auto refused = queue_->submit(unknown);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message,
            "dependency on job 'nothing-by-that-name', which does not exist (no job or array has "
            "that name)");
}

}  // namespace
}  // namespace gpuq::daemon::testing
