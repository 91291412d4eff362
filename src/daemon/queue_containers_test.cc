// SPDX-License-Identifier: Apache-2.0
// Container jobs in the queue and the run's lifecycle, on the World fake (docs/containers.md):
// images checked and pulled before GPUs are taken, the pull scheduled in the `net` lane, a
// failed check or pull failing the job, the run's spec made to run in the runtime, a stop that
// goes through the runtime, cleanup that looks for the run's containers, and directories given
// to a container user that is not the daemon's.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>

#include "daemon/queue_test_support.h"

namespace gpuq::daemon {
namespace {

using testing::FakeWorld;

class QueueContainersTest : public testing::QueueTest {
 protected:
  void SetUp() override {
    testing::QueueTest::SetUp();
    LaneConfig net;
    net.name = "net";
    net.capacity = 1;
    config_.lanes.push_back(net);
    start("fake:1");
  }
  static JobSpec in_image(const std::string& shell, const std::string& image = "reg.example/train:1") {
    JobSpec spec = command(shell);
    spec.image = image;
    return spec;
  }
  // The open image call of `id` (a check or a pull); nullptr when none.
  FakeWorld::ImageCall* image_call(int64_t id) {
    for (auto& call : world_->image_calls()) {
      if (call.request.job_id == id) return &call;
    }
    return nullptr;
  }
  // Answers the check of `id` (nothing to pull) and lets the job start.
  void image_present(int64_t id) {
    ASSERT_TRUE(world_->answer_images(id, {}));
    world_->run();
  }
};

TEST_F(QueueContainersTest, AnImageToPullIsPulledInTheNetLaneBeforeTheJobTakesItsGpu) {
  int64_t id = submit(in_image("train"));
  auto* check = image_call(id);
  ASSERT_NE(check, nullptr);
  EXPECT_FALSE(check->request.pull);
  EXPECT_EQ(check->request.images, std::vector<std::string>{"reg.example/train:1"});
  EXPECT_EQ(check->request.runtime.binary, "/usr/bin/docker");
  EXPECT_EQ(shim(id, 1), nullptr) << "no start before its image is known to be present";
  EXPECT_EQ(queue_->readiness_differences(), std::vector<std::string>{}) << "checking";
  ASSERT_TRUE(world_->answer_images(id, {"reg.example/train:1"}));
  world_->run();

  auto* pull = image_call(id);
  ASSERT_NE(pull, nullptr);
  EXPECT_TRUE(pull->request.pull);
  EXPECT_EQ(pull->request.log_path, "/fake-home/jobs/" + std::to_string(id) + "/pull.log");
  EXPECT_EQ(count("job.image_pulling", id), 1);
  EXPECT_EQ(state(id), JobState::kPending);
  EXPECT_EQ(shim(id, 1), nullptr);
  EXPECT_EQ(queue_->readiness_differences(), std::vector<std::string>{}) << "pulling";
  // The pull holds the net lane: a download job waits for it, and the GPU stays free for others.
  JobSpec download = command("fetch", 0);
  download.lanes = {"net"};
  int64_t fetch = submit(download);
  EXPECT_EQ(shim(fetch, 1), nullptr) << "the net lane is the pull's";
  auto published = queue_->waits();
  ASSERT_EQ(published->lane_holders.size(), 1u);
  EXPECT_EQ(published->lane_holders[0].second, std::vector<int64_t>{id}) << "status names the pull";
  int64_t other = submit(command("other gpu work"));
  ASSERT_NE(shim(other, 1), nullptr) << "a pull never holds a GPU";
  end_run(other, 1, exited(0));

  ASSERT_TRUE(world_->answer_images(id));
  world_->run();
  EXPECT_EQ(count("job.image_pulled", id), 1);
  ASSERT_NE(shim(id, 1), nullptr) << "started once pulled";
  EXPECT_NE(shim(fetch, 1), nullptr) << "the lane is free again";
  const auto& spec = world_->run_specs().at(run_dir(id, 1));
  ASSERT_GE(spec.argv.size(), 2u);
  EXPECT_EQ(spec.argv[0], "/usr/bin/docker");
  EXPECT_EQ(spec.argv[1], "run");
  EXPECT_NE(std::find(spec.argv.begin(), spec.argv.end(), "reg.example/train:1"), spec.argv.end());
}

TEST_F(QueueContainersTest, AFailedPullFailsTheJobWithTheRuntimesMessage) {
  int64_t id = submit(in_image("train"));
  ASSERT_TRUE(world_->answer_images(id, {"reg.example/train:1"}));
  world_->run();
  ASSERT_TRUE(world_->answer_images(id, {}, "Error: manifest unknown"));
  world_->run();
  EXPECT_EQ(state(id), JobState::kFailed);
  EXPECT_NE(job(id).reason.find("Error: manifest unknown"), std::string::npos) << job(id).reason;
  EXPECT_TRUE(job(id).runs.empty());
  // The lane is free: a download starts.
  JobSpec download = command("fetch", 0);
  download.lanes = {"net"};
  int64_t fetch = submit(download);
  EXPECT_NE(shim(fetch, 1), nullptr);
}

TEST_F(QueueContainersTest, APullOfACancelledJobDoesNotDecideForItsRetry) {
  int64_t id = submit(in_image("train"));
  ASSERT_TRUE(world_->answer_images(id, {"reg.example/train:1"}));
  world_->run();
  ASSERT_TRUE(image_call(id) && image_call(id)->request.pull);
  ASSERT_TRUE(queue_->cancel(id));
  world_->run();
  ASSERT_EQ(state(id), JobState::kCancelled);
  ASSERT_TRUE(queue_->retry(id, false));
  world_->run();
  // The retried job's own check (the old pull still runs: it is the oldest call).
  ASSERT_EQ(world_->image_calls().size(), 2u);
  EXPECT_FALSE(world_->image_calls().back().request.pull);
  world_->image_calls().back().done({id, world_->image_calls().back().request.seq, true, "", {"reg.example/train:1"}});
  world_->image_calls().pop_back();
  world_->run();
  EXPECT_EQ(world_->image_calls().size(), 1u) << "no second pull while the first runs";
  ASSERT_TRUE(world_->answer_images(id, {}, "Error: the old pull failed"));
  world_->run();
  EXPECT_EQ(state(id), JobState::kPending) << "the earlier pull's failure is not the retried job's";
  auto* pull = image_call(id);
  ASSERT_NE(pull, nullptr);
  EXPECT_TRUE(pull->request.pull) << "its own pull begins once the lane is free";
  ASSERT_TRUE(world_->answer_images(id));
  world_->run();
  EXPECT_NE(shim(id, 1), nullptr);
}

TEST_F(QueueContainersTest, NoRuntimeFailsTheJobSayingWhatToInstall) {
  world_->set_container_runtime(fail(Code::kNotFound, "no docker or podman on PATH /usr/bin"));
  int64_t id = submit(in_image("train"));
  EXPECT_EQ(state(id), JobState::kFailed);
  EXPECT_NE(job(id).reason.find("no docker or podman"), std::string::npos) << job(id).reason;
}

TEST_F(QueueContainersTest, ACancelStopsTheContainerThroughTheRuntimeAndCleanupLooksForIt) {
  int64_t id = submit(in_image("train"));
  image_present(id);
  ASSERT_NE(shim(id, 1), nullptr);
  std::string run_id = job(id).runs.at(0).run_id;
  ASSERT_TRUE(queue_->cancel(id));
  world_->run();
  EXPECT_EQ(world_->stopped_containers(), std::vector<std::string>{run_id});
  EXPECT_EQ(shim(id, 1)->signals, std::vector<int>{SIGTERM});
  end_run(id, 1, stopped_by_signal(SIGTERM));
  EXPECT_EQ(state(id), JobState::kCancelled);
  ASSERT_FALSE(world_->cleanup_targets().empty());
  const auto& target = world_->cleanup_targets().back();
  EXPECT_EQ(target.run_id, run_id);
  ASSERT_TRUE(target.containers.has_value()) << "a container job's cleanup looks for its containers";
  EXPECT_EQ(target.containers->binary, "/usr/bin/docker");
}

TEST_F(QueueContainersTest, AContainerLeftBehindPutsTheGpuInAttentionNamingIt) {
  world_->set_auto_clean(false);
  int64_t id = submit(in_image("train"));
  image_present(id);
  end_run(id, 1, exited(0));
  ASSERT_EQ(world_->cleanup_calls().size(), 1u);
  std::string container = "gpuq-" + world_->cleanup_calls().front().target.run_id + "-0";
  runner::CleanupOutcome outcome;
  outcome.scans = 2;
  outcome.containers_left = {container};
  outcome.containers_message = "Error: container is in use";
  world_->answer_cleanup(outcome);
  world_->run();
  auto attention = last_data("resource.attention", id);
  EXPECT_EQ(attention["containers"][0], container);
  EXPECT_NE(attention["why"].get<std::string>().find("container is in use"), std::string::npos) << attention.dump();
  EXPECT_NE(attention["fix"].get<std::string>().find("rm -f"), std::string::npos);
  // The GPU stays out: the next job does not start.
  int64_t next = submit(command("next"));
  EXPECT_EQ(shim(next, 1), nullptr);
}

TEST_F(QueueContainersTest, ARuntimeGoneAtCleanupLeavesItUnconfirmed) {
  int64_t id = submit(in_image("train"));
  image_present(id);
  world_->set_container_runtime(fail(Code::kNotFound, "no docker or podman on PATH"));
  end_run(id, 1, exited(0));
  auto attention = last_data("resource.attention", id);
  EXPECT_NE(attention["why"].get<std::string>().find("no container runtime"), std::string::npos)
      << attention.dump();
  int64_t next = submit(command("next"));
  EXPECT_EQ(shim(next, 1), nullptr) << "its GPU stays out";
}

TEST_F(QueueContainersTest, AFailedPullOfAHeldJobLeavesItHeldAndARetriedRunChecksAgain) {
  int64_t id = submit(in_image("train"));
  ASSERT_TRUE(world_->answer_images(id, {"reg.example/train:1"}));
  world_->run();
  ASSERT_TRUE(queue_->hold(id));
  world_->run();
  ASSERT_TRUE(world_->answer_images(id, {}, "Error: manifest unknown"));
  world_->run();
  EXPECT_EQ(state(id), JobState::kHeld) << "a held job's pull failing does not fail it";
  ASSERT_TRUE(queue_->release(id));
  world_->run();
  auto* check = image_call(id);
  ASSERT_NE(check, nullptr) << "checked again once released";
  EXPECT_FALSE(check->request.pull);
  // Present now; its run is lost (requeued): the next run's image is checked again.
  image_present(id);
  ASSERT_NE(shim(id, 1), nullptr);
  world_->vanish_shim(run_dir(id, 1));
  world_->run();
  EXPECT_EQ(state(id), JobState::kPending);
  EXPECT_NE(image_call(id), nullptr) << "checked again before run 2";
  EXPECT_EQ(shim(id, 2), nullptr);
}

TEST_F(QueueContainersTest, AContainerUserThatIsNotTheDaemonsGetsTheRunDirectoryAndReadsTheJobs) {
  JobSpec spec = in_image("train");
  spec.container_user = "4321:4322";
  int64_t id = submit(spec);
  image_present(id);
  ASSERT_NE(shim(id, 1), nullptr);
  EXPECT_EQ(world_->given_dirs().at(run_dir(id, 1)), "4321:4322");
  EXPECT_EQ(world_->given_dirs().count(layout().job_dir(id)), 0u) << "the daemon writes the job directory";
  EXPECT_EQ(world_->dir_modes().at(layout().job_dir(id)), 0755u);
  const auto& argv = world_->run_specs().at(run_dir(id, 1)).argv;
  auto user = std::find(argv.begin(), argv.end(), "--user");
  ASSERT_NE(user, argv.end());
  EXPECT_EQ(*(user + 1), "4321:4322");
}

}  // namespace
}  // namespace gpuq::daemon
