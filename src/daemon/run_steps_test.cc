// SPDX-License-Identifier: Apache-2.0
// The run lifecycle of jobs with steps, on a FakeWorld: where each run begins, each step's start
// and end recorded with its event as the shim reports it and at the run's end, in order and
// once, across preemption, lost runs, failures, retries and store failures.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "daemon/testing/run_lifecycle_fixture.h"

namespace gpuq::daemon::testing {
namespace {

using ::testing::ElementsAre;

class RunStepsTest : public RunLifecycleTest {
 protected:
  int64_t add_steps_job(int count, PreemptMode preempt = PreemptMode::kNever, int retries = 0) {
    Job job;
    job.spec.preempt = preempt;
    job.spec.retries = retries;
    for (int i = 0; i < count; ++i) {
      JobStep step;
      step.name = fmt::format("s{}", i);
      step.argv = {"sh", "-c", fmt::format("echo {}", i)};
      job.spec.steps.push_back(step);
    }
    return insert_job(std::move(job));
  }

  static StepRun step(int index, StepState state, int64_t at = 100) {
    StepRun s;
    s.index = index;
    s.state = state;
    if (state != StepState::kPending) s.started_at_ms = at + index * 10;
    if (state != StepState::kPending && state != StepState::kRunning) {
      s.ended_at_ms = at + index * 10 + 5;
      if (state == StepState::kSucceeded) s.exit_code = 0;
      if (state == StepState::kFailed) s.exit_code = 3;
    }
    return s;
  }

  // Each step event of the job as "started 2" or "finished 2 succeeded", with its run, in order.
  std::vector<std::string> step_events(int64_t job_id) {
    std::vector<std::string> out;
    auto events = store_->events_after(0, 1000);
    EXPECT_TRUE(events);
    for (const auto& e : *events) {
      if (e.job != job_id) continue;
      if (e.kind == "job.step_started") {
        out.push_back(fmt::format("run {} started {}", *e.run, e.data["step"].get<int>()));
      } else if (e.kind == "job.step_finished") {
        out.push_back(fmt::format("run {} finished {} {}", *e.run, e.data["step"].get<int>(),
                                  e.data["state"].get<std::string>()));
      }
    }
    return out;
  }

  runner::ExitRecord ended_with(std::vector<StepRun> steps, int code, bool stop_requested = false) {
    runner::ExitRecord r = exited(code);
    r.steps = std::move(steps);
    r.stop_requested = stop_requested;
    return r;
  }
};

TEST_F(RunStepsTest, AFourStepJobRestartedDuringStepThreeRunsStepsZeroToTwoOnce) {
  int64_t a = add_steps_job(4, PreemptMode::kRestart);
  runs_->start({{a, {0}}});
  const runner::RunSpec& first = world_->run_specs().at(run_dir(a, 1));
  ASSERT_EQ(first.steps.size(), 4u);
  EXPECT_EQ(first.first_step, 0);
  EXPECT_EQ(first.steps[2].name, "s2");

  // The shim reports each step as it goes; the daemon records each start and end as it hears.
  std::vector<StepRun> seen = {step(0, StepState::kRunning), step(1, StepState::kPending),
                               step(2, StepState::kPending), step(3, StepState::kPending)};
  world_->write_steps(run_dir(a, 1), seen);
  world_->run();
  EXPECT_THAT(step_events(a), ElementsAre("run 1 started 0"));
  seen = {step(0, StepState::kSucceeded), step(1, StepState::kSucceeded), step(2, StepState::kSucceeded),
          step(3, StepState::kRunning)};
  world_->write_steps(run_dir(a, 1), seen);
  world_->run();
  EXPECT_EQ(job(a).runs[0].steps.size(), 4u);
  EXPECT_EQ(job(a).runs[0].steps[3].state, StepState::kRunning);

  // Preempted with restart while step 3 runs: stopped, requeued in its place.
  runs_->request_preemption(a, 99, {0});
  ASSERT_EQ(world_->shims()[0]->signals, std::vector<int>{SIGTERM});
  seen[3] = step(3, StepState::kStopped);
  world_->exit_shim(run_dir(a, 1), ended_with(seen, 143, true));
  world_->run();
  EXPECT_EQ(job(a).state, JobState::kPending);
  EXPECT_EQ(job(a).runs[0].outcome, RunOutcome::kPreempted);

  // The next run begins at step 3; steps 0-2 are not run again.
  runs_->start({{a, {0}}});
  const runner::RunSpec& second = world_->run_specs().at(run_dir(a, 2));
  EXPECT_EQ(second.first_step, 3);
  EXPECT_EQ(second.env.at("GPUQ_RESUME"), "0") << "a restart is not a resume";
  EXPECT_EQ(job(a).runs[1].first_step, 3);
  world_->exit_shim(run_dir(a, 2), ended_with({step(3, StepState::kSucceeded)}, 0));
  world_->run();
  EXPECT_EQ(job(a).state, JobState::kSucceeded);
  EXPECT_THAT(step_events(a),
              ElementsAre("run 1 started 0", "run 1 finished 0 succeeded", "run 1 started 1",
                          "run 1 finished 1 succeeded", "run 1 started 2", "run 1 finished 2 succeeded",
                          "run 1 started 3", "run 1 finished 3 stopped", "run 2 started 3",
                          "run 2 finished 3 succeeded"));
}

TEST_F(RunStepsTest, StepsTheStoreRefusedAreRecordedAtTheRunsEndBeforeItsOutcome) {
  int64_t a = add_steps_job(2);
  runs_->start({{a, {0}}});
  world_->run();
  world_->fail_commits(1);
  world_->write_steps(run_dir(a, 1), {step(0, StepState::kRunning), step(1, StepState::kPending)});
  world_->run();
  EXPECT_THAT(step_events(a), ::testing::IsEmpty());
  EXPECT_EQ(world_->failed_commits(), 1);
  world_->exit_shim(run_dir(a, 1), ended_with({step(0, StepState::kSucceeded), step(1, StepState::kSucceeded)}, 0));
  world_->run();
  EXPECT_THAT(step_events(a), ElementsAre("run 1 started 0", "run 1 finished 0 succeeded", "run 1 started 1",
                                          "run 1 finished 1 succeeded"));
  std::vector<std::string> all = kinds(a);
  EXPECT_EQ(all.back(), "job.succeeded") << "the steps' events come before the run's end";
  EXPECT_EQ(world_->open_watches(), 0u) << "the watch on steps.json ends with the run";
}

TEST_F(RunStepsTest, AFailedStepFailsTheRunNamingItAndARetryResumesThere) {
  int64_t a = add_steps_job(3, PreemptMode::kNever, /*retries=*/1);
  runs_->start({{a, {0}}});
  world_->exit_shim(run_dir(a, 1), ended_with({step(0, StepState::kSucceeded), step(1, StepState::kFailed),
                                               step(2, StepState::kPending)},
                                              3));
  world_->run();
  Job after = job(a);
  EXPECT_EQ(after.state, JobState::kPending) << "one retry left";
  EXPECT_EQ(after.reason, "run 1: step 1 (s1) failed: exit code 3; retry 1/1");
  world_->advance(3'600'000);
  runs_->start({{a, {0}}});
  EXPECT_EQ(world_->run_specs().at(run_dir(a, 2)).first_step, 1) << "the failed step runs again, not step 0";
  world_->exit_shim(run_dir(a, 2), ended_with({step(1, StepState::kFailed), step(2, StepState::kPending)}, 3));
  world_->run();
  EXPECT_EQ(job(a).state, JobState::kFailed);
  EXPECT_EQ(job(a).reason, "run 2: step 1 (s1) failed: exit code 3");

  // `gpuq retry --from-start`: the next run begins at step 0, and the mark is spent.
  ASSERT_TRUE(world_->commit([&]() -> Status {
    if (auto st = store_->set_job_state(a, JobState::kPending, "retried", std::nullopt); !st) return st;
    return store_->set_steps_from_start(a, true);
  }));
  host_->active[a].state = JobState::kPending;
  runs_->start({{a, {0}}});
  EXPECT_EQ(world_->run_specs().at(run_dir(a, 3)).first_step, 0);
  EXPECT_FALSE(job(a).steps_from_start);
}

TEST_F(RunStepsTest, AStepsOwnTimeoutTimesTheRunOut) {
  int64_t a = add_steps_job(2);
  runs_->start({{a, {0}}});
  world_->exit_shim(run_dir(a, 1), ended_with({step(0, StepState::kTimedOut), step(1, StepState::kPending)}, 143));
  world_->run();
  EXPECT_EQ(job(a).runs[0].outcome, RunOutcome::kTimedOut);
  EXPECT_EQ(job(a).reason, "run 1: step 0 (s0) timed out");
}

TEST_F(RunStepsTest, ALostRunResumesAtTheStepItWasInWhichIsRecordedStopped) {
  int64_t a = add_steps_job(3);
  runs_->start({{a, {0}}});
  world_->write_steps(run_dir(a, 1), {step(0, StepState::kSucceeded), step(1, StepState::kRunning),
                                      step(2, StepState::kPending)});
  world_->run();
  world_->vanish_shim(run_dir(a, 1));
  world_->run();
  Job after = job(a);
  EXPECT_EQ(after.state, JobState::kPending);
  EXPECT_EQ(after.runs[0].outcome, RunOutcome::kLost);
  ASSERT_EQ(after.runs[0].steps.size(), 3u);
  EXPECT_EQ(after.runs[0].steps[1].state, StepState::kStopped);
  EXPECT_THAT(step_events(a), ElementsAre("run 1 started 0", "run 1 finished 0 succeeded", "run 1 started 1",
                                          "run 1 finished 1 stopped"));
  runs_->start({{a, {0}}});
  EXPECT_EQ(world_->run_specs().at(run_dir(a, 2)).first_step, 1);
}

TEST_F(RunStepsTest, AYieldingStepRunsAgainWithResume) {
  int64_t a = add_steps_job(3, PreemptMode::kYield);
  runs_->start({{a, {0}}});
  runs_->request_preemption(a, 99, {0});
  world_->exit_shim(run_dir(a, 1), ended_with({step(0, StepState::kSucceeded), step(1, StepState::kStopped),
                                               step(2, StepState::kPending)},
                                              kYieldExitCode));
  world_->run();
  EXPECT_EQ(job(a).runs[0].outcome, RunOutcome::kPreempted);
  runs_->start({{a, {0}}});
  const runner::RunSpec& again = world_->run_specs().at(run_dir(a, 2));
  EXPECT_EQ(again.first_step, 1);
  EXPECT_EQ(again.env.at("GPUQ_RESUME"), "1");
}

TEST_F(RunStepsTest, AnAdoptedRunTellsTheStepsItMissedWhileTheDaemonWasDown) {
  int64_t a = add_steps_job(2);
  runs_->start({{a, {0}}});
  world_->write_steps(run_dir(a, 1), {step(0, StepState::kRunning), step(1, StepState::kPending)});
  world_->run();
  pid_t pid = world_->shims()[0]->pid;
  uint64_t ticks = world_->shims()[0]->ticks;
  // The daemon goes; the shim runs on and finishes step 0 meanwhile.
  runs_->stop();
  runs_ = std::make_unique<RunLifecycle>(*world_, *store_, inventory_, config_,
                                         RunPlaces{HomeLayout{"/fake-home"}, "boot-a", 022}, *host_);
  world_->write_steps(run_dir(a, 1), {step(0, StepState::kSucceeded), step(1, StepState::kRunning)});
  world_->add_live_shim(pid, ticks);
  ASSERT_TRUE(runs_->recover());
  world_->run();
  EXPECT_THAT(step_events(a), ElementsAre("run 1 started 0", "run 1 finished 0 succeeded", "run 1 started 1"));
}

}  // namespace
}  // namespace gpuq::daemon::testing
