// SPDX-License-Identifier: Apache-2.0
// `gpuq simulate` describes the machine as the daemon of the home would: config.toml's lanes
// and scheduler policy, from --config FILE or the home's config.toml (found as the daemon finds
// its home).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <optional>
#include <string>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/fake_transport.h"

namespace gpuq::cli {
namespace {

using testing::TempDir;

// Two one-hour downloads that both hold lane `net`.
constexpr std::string_view kLanePlan =
    R"({"jobs":[{"id":"fetch-a","gpus":0,"command":["true"],"est_hours":1,"lanes":["net"]},)"
    R"({"id":"fetch-b","gpus":0,"command":["true"],"est_hours":1,"lanes":["net"]}]})";

// On 2 GPUs, backfill starts `small` beside `first` while `wide` waits for both GPUs (2h in
// all); fifo and priority keep `small` behind `wide` (3h).
constexpr std::string_view kBackfillPlan =
    R"({"jobs":[{"id":"first","gpus":1,"command":["true"],"est_hours":1},)"
    R"({"id":"wide","gpus":2,"command":["true"],"est_hours":1},)"
    R"({"id":"small","gpus":1,"command":["true"],"est_hours":1}]})";

class SimulateConfig : public testing::ScriptedCli {
 protected:
  // The makespan in seconds of a --json run, or nullopt (with the test failed) when it did not
  // succeed.
  std::optional<int64_t> makespan_s(std::vector<std::string> args) {
    process_.out.str("");
    process_.err.str("");
    args.push_back("--json");
    int status = run(args);
    EXPECT_EQ(status, kExitOk) << err();
    Json result = Json::parse(out(), nullptr, false);
    if (status != kExitOk || !result.is_object()) return std::nullopt;
    return result.value("makespan_s", int64_t{-1});
  }

  TempDir dir_;
};

TEST_F(SimulateConfig, APlanWithALaneSimulatesWithConfig) {
  std::string plan = dir_.write("plan.json", std::string(kLanePlan));
  std::string one = dir_.write("one.toml", "[lanes.net]\ncapacity = 1\n");
  std::string two = dir_.write("two.toml", "[lanes.net]\ncapacity = 2\n");
  // The fake home has no config.toml: no lanes, so the plan cannot run.
  EXPECT_EQ(run({"simulate", plan, "--gpus", "1"}), kExitFailed);
  EXPECT_NE(err().find("net"), std::string::npos) << err();
  // The lane's capacity decides: one download at a time, or both at once.
  EXPECT_EQ(makespan_s({"simulate", plan, "--gpus", "1", "--config", one}), 2 * 3600);
  EXPECT_EQ(makespan_s({"simulate", plan, "--gpus", "1", "--config", two}), 3600);
  // A relative --config is read from the current directory.
  process_.io.cwd = dir_.path();
  EXPECT_EQ(makespan_s({"simulate", plan, "--gpus", "1", "--config", "one.toml"}), 2 * 3600);
  EXPECT_TRUE(process_.daemon.requests.empty());
}

TEST_F(SimulateConfig, TheConfigsPolicyAppliesUnlessPolicyIsGiven) {
  std::string plan = dir_.write("plan.json", std::string(kBackfillPlan));
  std::string fifo = dir_.write("fifo.toml", "[scheduler]\npolicy = \"fifo\"\n");
  EXPECT_EQ(makespan_s({"simulate", plan, "--gpus", "2"}), 2 * 3600);  // default backfill
  EXPECT_EQ(makespan_s({"simulate", plan, "--gpus", "2", "--config", fifo}), 3 * 3600);
  EXPECT_EQ(makespan_s({"simulate", plan, "--gpus", "2", "--config", fifo, "--policy", "backfill"}),
            2 * 3600);
}

// Without --config the home's config.toml is read, the home found as the daemon finds it
// ($GPUQ_HOME here, no --home).
TEST_F(SimulateConfig, TheHomesConfigIsReadByDefault) {
  TempDir home;
  home.write("config.toml", "[lanes.net]\ncapacity = 1\n[scheduler]\npolicy = \"priority\"\n");
  std::string plan = dir_.write("lanes.json", std::string(kLanePlan));
  std::string backfill = dir_.write("backfill.json", std::string(kBackfillPlan));
  const char* saved = std::getenv("GPUQ_HOME");
  std::optional<std::string> old = saved ? std::optional<std::string>(saved) : std::nullopt;
  ::setenv("GPUQ_HOME", home.path().c_str(), 1);
  auto run_bare = [&](const std::string& file) {
    process_.out.str("");
    int status = run_cli({"simulate", file, "--gpus", "2", "--json"}, Hooks{}, process_.io);
    EXPECT_EQ(status, kExitOk) << err();
    return Json::parse(out(), nullptr, false).value("makespan_s", int64_t{-1});
  };
  EXPECT_EQ(run_bare(plan), 2 * 3600);      // lane net, capacity 1
  EXPECT_EQ(run_bare(backfill), 3 * 3600);  // policy priority: no backfill
  if (old) {
    ::setenv("GPUQ_HOME", old->c_str(), 1);
  } else {
    ::unsetenv("GPUQ_HOME");
  }
}

TEST_F(SimulateConfig, ABadConfigNamesFileAndLine) {
  std::string plan = dir_.write("plan.json", std::string(kLanePlan));
  std::string bad = dir_.write("bad.toml", "[lanes.net]\ncapacity = 0\n");
  expect_usage_error({"simulate", plan, "--gpus", "1", "--config", bad},
                     bad + ":2:12: lanes.net.capacity must be a whole number from 1 to");
  std::string missing = dir_.path() + "/nothing.toml";
  expect_usage_error({"simulate", plan, "--gpus", "1", "--config", missing},
                     "cannot read the config file " + missing + ": No such file or directory");
}

// A bad config.toml in the home is reported too, rather than silently simulating without it.
TEST_F(SimulateConfig, ABadHomeConfigIsAnError) {
  TempDir home;
  std::string file = home.write("config.toml", "[scheduler]\npolicy = \"lifo\"\n");
  std::string plan = dir_.write("plan.json", std::string(kLanePlan));
  expect_usage_error({"simulate", "--home", home.path(), plan, "--gpus", "1"},
                     file + ":2:10: scheduler.policy must be one of");
}

// A plan's capped array runs as its elements, at most its cap at once, and beside config.toml's
// lanes (sim/sweep_jobs.h): six one-hour elements, two at a time, take 3h on four GPUs, and the
// job after the array 1h more.
TEST_F(SimulateConfig, APlansArrayRunsAsItsElementsWithinItsCap) {
  std::string plan = dir_.write(
      "plan.json",
      R"({"jobs":[{"id":"shards","gpus":1,"command":["true"],"est_hours":1,"array":"0-5%2"},)"
      R"({"id":"after","gpus":1,"command":["true"],"est_hours":1,"deps":["shards"]}]})");
  EXPECT_EQ(makespan_s({"simulate", plan, "--gpus", "4"}), 4 * 3600);
  process_.out.str("");
  ASSERT_EQ(run({"simulate", plan, "--gpus", "4"}), kExitOk) << err();
  EXPECT_NE(out().find("shards[5]"), std::string::npos) << out();
}

}  // namespace
}  // namespace gpuq::cli
