// SPDX-License-Identifier: Apache-2.0
// Real processes: a run's shim runs a job's steps in order (docs/jobs.md, "Steps").
#include <csignal>
#include <filesystem>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "os/process.h"
#include "runner/launcher.h"
#include "runner/run_files.h"

namespace gpuq::runner {
namespace {

class ShimStepsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            ("gpuq-shim-steps-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A step that appends "INDEX COUNT RESUME NAME" to trace.txt, then runs `then`.
  StepSpec step(const std::string& name, const std::string& then = "true", int64_t timeout_ms = 0,
                const std::string& done_if = "") {
    return {name,
            {"sh", "-c",
             "echo \"$GPUQ_STEP_INDEX $GPUQ_STEP_COUNT $GPUQ_RESUME $GPUQ_STEP_NAME\" >> trace.txt; echo step " + name +
                 "; " + then},
            timeout_ms,
            done_if};
  }

  ExitRecord run(std::vector<StepSpec> steps, int first_step = 0, bool resume = false) {
    auto shim = start(std::move(steps), first_step, resume);
    EXPECT_TRUE(shim.release());
    int status = 0;
    waitpid(shim.pid(), &status, 0);
    auto record = read_exit_record(dir_);
    EXPECT_TRUE(record) << record.error().message;
    return record ? *record : ExitRecord{};
  }

  LaunchedShim start(std::vector<StepSpec> steps, int first_step = 0, bool resume = false) {
    RunSpec spec;
    spec.env = {{"PATH", "/usr/bin:/bin"}, {"GPUQ_RESUME", resume ? "1" : "0"}};
    spec.cwd = dir_;
    spec.kill_grace_ms = 2000;
    spec.steps = std::move(steps);
    spec.first_step = first_step;
    EXPECT_TRUE(write_run_spec(dir_, spec));
    auto shim = launch_shim(GPUQ_SHIM_FOR_TEST, dir_);
    EXPECT_TRUE(shim) << shim.error().message;
    return std::move(*shim);
  }

  std::vector<std::string> trace() const {
    std::vector<std::string> lines;
    auto text = os::read_file(dir_ + "/trace.txt");
    if (!text) return lines;
    std::string line;
    for (char c : *text) {
      if (c == '\n') {
        lines.push_back(line);
        line.clear();
      } else {
        line += c;
      }
    }
    return lines;
  }

  void wait_for_file(const std::string& name) const {
    for (int i = 0; i < 1000 && !std::filesystem::exists(dir_ + "/" + name); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(std::filesystem::exists(dir_ + "/" + name)) << name;
  }

  std::string dir_;
};

std::vector<StepState> states(const std::vector<StepRun>& steps) {
  std::vector<StepState> out;
  for (const auto& s : steps) out.push_back(s.state);
  return out;
}

TEST_F(ShimStepsTest, StepsRunInOrderEachWithItsIndexAndTheCount) {
  ExitRecord record = run({step("prepare"), step("train"), step("eval")});
  EXPECT_EQ(trace(), (std::vector<std::string>{"0 3 0 prepare", "1 3 0 train", "2 3 0 eval"}));
  EXPECT_EQ(record.exit_code, 0);
  ASSERT_EQ(record.steps.size(), 3u);
  EXPECT_EQ(states(record.steps),
            (std::vector<StepState>{StepState::kSucceeded, StepState::kSucceeded, StepState::kSucceeded}));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(record.steps[i].index, i);
    EXPECT_EQ(record.steps[i].exit_code, 0);
    EXPECT_GT(record.steps[i].started_at_ms, 0);
    EXPECT_GE(record.steps[i].ended_at_ms, record.steps[i].started_at_ms);
  }
  // Each step's log offset is where its output begins in output.log.
  auto log = os::read_file(log_path(dir_));
  ASSERT_TRUE(log);
  EXPECT_EQ(log->substr(record.steps[1].log_offset, 11), "step train\n");
  EXPECT_EQ(log->substr(record.steps[2].log_offset), "step eval\n");
  // steps.json holds the same as the exit record.
  auto live = read_step_record(dir_);
  ASSERT_TRUE(live) << live.error().message;
  EXPECT_EQ(states(*live), states(record.steps));
}

TEST_F(ShimStepsTest, AFailingStepEndsTheRunWithItsStatusAndTheRestAreNotReached) {
  ExitRecord record = run({step("prepare"), step("train", "exit 3"), step("eval")});
  EXPECT_EQ(trace(), (std::vector<std::string>{"0 3 0 prepare", "1 3 0 train"}));
  EXPECT_EQ(record.exit_code, 3);
  EXPECT_EQ(states(record.steps),
            (std::vector<StepState>{StepState::kSucceeded, StepState::kFailed, StepState::kPending}));
  EXPECT_EQ(record.steps[1].exit_code, 3);
  EXPECT_EQ(record.steps[2].started_at_ms, 0);
}

TEST_F(ShimStepsTest, AResumedRunBeginsAtItsFirstStepWhichAloneResumes) {
  ExitRecord record = run({step("prepare"), step("train"), step("eval"), step("export")}, 2, true);
  EXPECT_EQ(trace(), (std::vector<std::string>{"2 4 1 eval", "3 4 0 export"}));
  ASSERT_EQ(record.steps.size(), 2u);
  EXPECT_EQ(record.steps[0].index, 2);
  EXPECT_EQ(record.steps[1].index, 3);
  EXPECT_EQ(record.exit_code, 0);
}

TEST_F(ShimStepsTest, AStepWhoseDoneIfPassesIsSkipped) {
  ASSERT_TRUE(os::write_file_atomic(dir_ + "/prepared", "yes", false));
  ExitRecord record = run({step("prepare", "true", 0, "test -f prepared"), step("train", "true", 0, "test -f trained")});
  EXPECT_EQ(trace(), (std::vector<std::string>{"1 2 0 train"}));
  EXPECT_EQ(states(record.steps), (std::vector<StepState>{StepState::kSkipped, StepState::kSucceeded}));
  EXPECT_EQ(record.exit_code, 0);
}

TEST_F(ShimStepsTest, AStepsOwnTimeoutStopsItAndEndsTheRun) {
  ExitRecord record = run({step("prepare"), step("train", "exec sleep 30", 300), step("eval")});
  EXPECT_EQ(trace(), (std::vector<std::string>{"0 3 0 prepare", "1 3 0 train"}));
  EXPECT_EQ(states(record.steps),
            (std::vector<StepState>{StepState::kSucceeded, StepState::kTimedOut, StepState::kPending}));
  EXPECT_EQ(record.signal, SIGTERM);
  EXPECT_FALSE(record.stop_requested) << "a step's timeout is not a stop the daemon asked for";
}

TEST_F(ShimStepsTest, AStopWhileAStepRunsStopsItAndNoFurtherStepStarts) {
  auto shim = start({step("prepare"), step("train", "touch ready; exec sleep 30"), step("eval")});
  ASSERT_TRUE(shim.release());
  wait_for_file("ready");
  kill(shim.pid(), SIGTERM);
  int status = 0;
  waitpid(shim.pid(), &status, 0);
  auto record = read_exit_record(dir_);
  ASSERT_TRUE(record);
  EXPECT_TRUE(record->stop_requested);
  EXPECT_EQ(states(record->steps),
            (std::vector<StepState>{StepState::kSucceeded, StepState::kStopped, StepState::kPending}));
  EXPECT_EQ(trace(), (std::vector<std::string>{"0 3 0 prepare", "1 3 0 train"}));
}

TEST_F(ShimStepsTest, AStepThatCannotStartFailsWithStatus127AndSaysWhy) {
  ExitRecord record = run({step("prepare"), StepSpec{"missing", {"/nonexistent/tool"}, 0, ""}, step("eval")});
  EXPECT_EQ(record.exit_code, 127);
  EXPECT_EQ(states(record.steps),
            (std::vector<StepState>{StepState::kSucceeded, StepState::kFailed, StepState::kPending}));
  auto log = os::read_file(log_path(dir_));
  ASSERT_TRUE(log);
  EXPECT_NE(log->find("gpuq: cannot run /nonexistent/tool"), std::string::npos) << *log;
}

TEST_F(ShimStepsTest, ARunSpecWithStepsReadsBackAndABadFirstStepIsRefused) {
  RunSpec spec;
  spec.env = {{"PATH", "/bin"}};
  spec.cwd = dir_;
  spec.steps = {step("a"), step("b")};
  spec.first_step = 1;
  ASSERT_TRUE(write_run_spec(dir_, spec));
  auto back = read_run_spec(dir_);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->steps.size(), 2u);
  EXPECT_EQ(back->first_step, 1);
  EXPECT_EQ(back->steps[1].name, "b");
  spec.first_step = 3;
  std::filesystem::remove(run_spec_path(dir_));
  ASSERT_TRUE(write_run_spec(dir_, spec));
  auto bad = read_run_spec(dir_);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("first_step 3 is not one of its 2 steps"), std::string::npos)
      << bad.error().message;
}

}  // namespace
}  // namespace gpuq::runner
