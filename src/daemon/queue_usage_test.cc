// SPDX-License-Identifier: Apache-2.0
// What the queue actor records for the dashboard: each submitted job's user, a running run's
// utilisation samples (at most one per 30 s) and the GPUs its processes were seen on (from the
// probe), and what job.moved tells an undo.
#include <gtest/gtest.h>
#include <unistd.h>

#include "daemon/queue_test_support.h"
#include "os/process_table.h"

namespace gpuq::daemon {
namespace {

using QueueUsageTest = testing::QueueTest;

gpu::GpuSample gpu_at(int index, int utilization, std::vector<gpu::GpuProcess> processes = {}) {
  gpu::GpuSample g;
  g.index = index;
  g.utilization = utilization;
  for (const auto& p : processes) g.memory_used_mib += p.used_memory_mib;
  g.processes = std::move(processes);
  return g;
}

TEST_F(QueueUsageTest, AJobWithoutAUserIsTheDaemonsAndAGivenOneIsKept) {
  start();
  JobSpec spec = command("true", 0);
  int64_t plain = submit(spec);
  spec.user = "alice";
  int64_t named = submit(spec);
  EXPECT_EQ(job(plain).spec.user, os::user_name(::geteuid()));
  EXPECT_EQ(job(named).spec.user, "alice");
}

TEST_F(QueueUsageTest, ARunIsSampledAtMostEveryThirtySecondsAndItsSeenGpusKept) {
  start("fake:3");
  int64_t id = submit(command("train", 2));
  ASSERT_EQ(state(id), JobState::kRunning);
  gpuq::Run run = job(id).runs.at(0);
  ASSERT_EQ(run.gpus, (std::vector<std::string>{"gpu0", "gpu1"}));
  // Its process (by its marker) on gpu1, which it holds, and on gpu2, which it does not.
  world_->table().add(4242, 1, 77, 1000, run.run_id, "python train.py");
  gpu::ProbeSample sample;
  sample.gpus = {gpu_at(0, 20), gpu_at(1, 61, {{4242, 300}}), gpu_at(2, 90, {{4242, 100}})};
  queue_->on_probe(sample);
  world_->run();

  auto samples = store_->run_samples({run.id}, 0, INT64_MAX);
  ASSERT_TRUE(samples);
  // The mean of its own GPUs (20 and 61, rounded); the memory of its processes on every GPU.
  ASSERT_EQ(samples->at(run.id), (std::vector<RunSample>{{world_->now(), 41, 400}}));
  run = job(id).runs.at(0);
  EXPECT_EQ(run.seen_gpus, (std::vector<std::string>{"gpu1", "gpu2"}));
  EXPECT_EQ(run.seen_gpu_indices, (std::vector<int>{1, 2}));

  int64_t first = world_->now();
  world_->advance(10'000);
  sample.gpus = {gpu_at(0, 0), gpu_at(1, 0), gpu_at(2, 0)};  // no process listed now
  queue_->on_probe(sample);
  world_->run();
  samples = store_->run_samples({run.id}, 0, INT64_MAX);
  ASSERT_TRUE(samples);
  EXPECT_EQ(samples->at(run.id).size(), 1u);  // too soon for another
  EXPECT_EQ(job(id).runs.at(0).seen_gpus, (std::vector<std::string>{"gpu1", "gpu2"}));  // kept

  world_->advance(20'000);
  queue_->on_probe(sample);
  world_->run();
  samples = store_->run_samples({run.id}, 0, INT64_MAX);
  ASSERT_TRUE(samples);
  EXPECT_EQ(samples->at(run.id),
            (std::vector<RunSample>{{first, 41, 400}, {first + 30'000, 0, 0}}));
}

TEST_F(QueueUsageTest, JobMovedSaysWhereTheJobWasForAnUndo) {
  start("fake:1");
  submit(command("block", 1));  // runs
  int64_t a = submit(command("a", 1));
  int64_t b = submit(command("b", 1));
  int64_t c = submit(command("c", 1));
  Job before = job(c);
  MoveRequest top;
  top.where = MoveRequest::Where::kTop;
  ASSERT_TRUE(queue_->move(c, top));
  nlohmann::json data = last_data("job.moved");
  EXPECT_EQ(data["from_priority"], before.spec.priority);
  EXPECT_EQ(data["from_queue_order"], before.queue_order);
  EXPECT_EQ(data["from_after"], b);
  EXPECT_EQ(data["queue_order"], job(c).queue_order);

  // First in the queue: it followed no one. Undo puts it after b again.
  MoveRequest bottom;
  bottom.where = MoveRequest::Where::kBottom;
  ASSERT_TRUE(queue_->move(c, bottom));
  EXPECT_TRUE(last_data("job.moved")["from_after"].is_null());
  MoveRequest after_a;
  after_a.where = MoveRequest::Where::kAfter;
  after_a.other = a;
  ASSERT_TRUE(queue_->move(c, after_a));
  EXPECT_EQ(last_data("job.moved")["from_after"], b);
}

}  // namespace
}  // namespace gpuq::daemon
