// SPDX-License-Identifier: Apache-2.0
// An array as one unit in the queue actor: array.finished when its last element ends (once per
// finish, with the counts), `gpuq move NAME` (move_array: the waiting elements as one block),
// and the same array submitted again after some of its elements were pruned.
#include <fmt/format.h>
#include <gmock/gmock.h>

#include "daemon/queue_test_support.h"

namespace gpuq::daemon::testing {
namespace {

class ArrayQueueTest : public QueueTest {
 protected:
  SweepSubmitted queue_array(const std::string& name, const std::string& text, const std::string& shell = "true") {
    JobSpec base = command(shell, 0);
    base.name = name;
    auto sweep = spec::parse_array(text);
    EXPECT_TRUE(sweep);
    auto submitted =
        queue_->submit_sweep(SweepRequest{base, *sweep, fmt::format(R"({{"array":"{}"}})", text)});
    world_->run();
    EXPECT_TRUE(submitted) << submitted.error().message;
    return submitted ? *submitted : SweepSubmitted{};
  }
  // The waiting jobs' ids in the order the scheduler serves them (priority, queue order, id).
  std::vector<int64_t> serving_order(const std::vector<int64_t>& ids) {
    std::vector<Job> jobs;
    for (int64_t id : ids) jobs.push_back(job(id));
    std::sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) {
      if (a.spec.priority != b.spec.priority) return a.spec.priority < b.spec.priority;
      return a.queue_order != b.queue_order ? a.queue_order < b.queue_order : a.id < b.id;
    });
    std::vector<int64_t> out;
    for (const Job& j : jobs) out.push_back(j.id);
    return out;
  }
  Result<std::vector<int64_t>> move_array(int64_t array_id, MoveRequest::Where where, int64_t other = 0,
                                          int priority = 0) {
    auto moved = queue_->move_array(array_id, MoveRequest{where, other, priority});
    world_->run();
    return moved;
  }
};

TEST_F(ArrayQueueTest, ArrayFinishedIsRecordedWhenTheLastElementEndsWithTheCounts) {
  start("fake:4");
  SweepSubmitted array = queue_array("shards", "0-2");
  const auto& ids = array.element_ids;
  ASSERT_EQ(ids.size(), 3u);
  end_run(ids[0], 1, exited(0));
  end_run(ids[1], 1, exited(3));
  EXPECT_EQ(count("array.finished"), 0) << "shards[2] still runs";
  end_run(ids[2], 1, exited(0));
  EXPECT_EQ(count("array.finished"), 1);
  EXPECT_EQ(last_data("array.finished"),
            (nlohmann::json{{"array", array.array.id}, {"name", "shards"}, {"size", 3},
                            {"counts", {{"failed", 1}, {"succeeded", 2}}}}));

  // A retried element makes the array unfinished again; it finishes again with new counts.
  ASSERT_TRUE(queue_->retry(ids[1]));
  world_->run();
  EXPECT_EQ(state(ids[1]), JobState::kRunning);
  end_run(ids[1], 2, exited(0));
  EXPECT_EQ(count("array.finished"), 2);
  EXPECT_EQ(last_data("array.finished")["counts"], (nlohmann::json{{"succeeded", 3}}));
}

TEST_F(ArrayQueueTest, CancellingEveryWaitingElementFinishesTheArrayOnce) {
  start("fake:4");
  ASSERT_TRUE(queue_->set_draining(true));  // nothing starts: every element waits
  SweepSubmitted array = queue_array("waiting", "0-3");
  for (int64_t id : array.element_ids) ASSERT_TRUE(queue_->cancel(id));
  world_->run();
  EXPECT_EQ(count("array.finished"), 1);
  EXPECT_EQ(last_data("array.finished")["counts"], (nlohmann::json{{"cancelled", 4}}));
}

TEST_F(ArrayQueueTest, MoveArrayPlacesTheWaitingElementsAsOneBlockInTheirOrder) {
  start("fake:4");
  ASSERT_TRUE(queue_->set_draining(true));
  int64_t a = submit(command("true", 0));
  int64_t b = submit(command("true", 0));
  SweepSubmitted array = queue_array("block", "0-2");
  const auto& e = array.element_ids;
  int64_t c = submit(command("true", 0));
  std::vector<int64_t> all = {a, b, e[0], e[1], e[2], c};
  using W = MoveRequest::Where;

  auto moved = move_array(array.array.id, W::kTop);
  ASSERT_TRUE(moved) << moved.error().message;
  EXPECT_EQ(*moved, e);
  EXPECT_EQ(serving_order(all), (std::vector<int64_t>{e[0], e[1], e[2], a, b, c}));
  EXPECT_EQ(count("job.moved"), 3);
  EXPECT_EQ(last_data("job.moved")["array"], array.array.id);

  ASSERT_TRUE(move_array(array.array.id, W::kBottom));
  EXPECT_EQ(serving_order(all), (std::vector<int64_t>{a, b, c, e[0], e[1], e[2]}));

  ASSERT_TRUE(move_array(array.array.id, W::kBefore, b));
  EXPECT_EQ(serving_order(all), (std::vector<int64_t>{a, e[0], e[1], e[2], b, c}));

  ASSERT_TRUE(move_array(array.array.id, W::kAfter, c));
  EXPECT_EQ(serving_order(all), (std::vector<int64_t>{a, b, c, e[0], e[1], e[2]}));

  ASSERT_TRUE(move_array(array.array.id, W::kPriority, 0, 10));
  EXPECT_EQ(serving_order(all), (std::vector<int64_t>{e[0], e[1], e[2], a, b, c}));
  for (int64_t id : e) EXPECT_EQ(job(id).spec.priority, 10);

  auto own = move_array(array.array.id, W::kBefore, e[1]);
  ASSERT_FALSE(own);
  EXPECT_EQ(own.error().code, Code::kNotFound);
  EXPECT_EQ(own.error().message,
            fmt::format("job {} is not waiting, or is an element of this array; move the array "
                        "relative to another waiting job",
                        e[1]));
  // What the scheduler reads is what the store says: a restarted daemon serves the same order.
  restart("fake:4");
  EXPECT_EQ(serving_order(all), (std::vector<int64_t>{e[0], e[1], e[2], a, b, c}));
}

TEST_F(ArrayQueueTest, AnArrayWithNothingWaitingCannotBeMoved) {
  start("fake:4");
  SweepSubmitted array = queue_array("quick", "0-1");
  for (int64_t id : array.element_ids) end_run(id, 1, exited(0));
  auto moved = move_array(array.array.id, MoveRequest::Where::kTop);
  ASSERT_FALSE(moved);
  EXPECT_EQ(moved.error().code, Code::kConflict);
  EXPECT_EQ(moved.error().message, fmt::format("array {} has no waiting element to move", array.array.id));
}

TEST_F(ArrayQueueTest, TheSameArrayAgainIsFoundAfterItsFirstElementWasPruned) {
  start("fake:4");
  SweepSubmitted array = queue_array("long", "0-2", "sleep 100");
  end_run(array.element_ids[0], 1, exited(0));
  world_->advance(1'000);  // its cleanup's confirmation, committed alone within a second
  ASSERT_TRUE(store_->transaction([&] { return store_->prune_jobs({array.element_ids[0]}); }));
  JobSpec base = command("sleep 100", 0);
  base.name = "long";
  auto again = queue_->submit_sweep(SweepRequest{base, *spec::parse_array("0-2"), R"({"array":"0-2"})"});
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->existing);
  EXPECT_EQ(again->element_ids, (std::vector<int64_t>{array.element_ids[1], array.element_ids[2]}));
  base.argv = {"sh", "-c", "sleep 200"};
  auto changed = queue_->submit_sweep(SweepRequest{base, *spec::parse_array("0-2"), R"({"array":"0-2"})"});
  ASSERT_FALSE(changed);
  EXPECT_EQ(changed.error().code, Code::kConflict);
}

// A restart reads an array's row once, not once per element: 500 more elements cost the
// restart what 500 more single jobs do (each is one row of the jobs read), where a read of the
// array's row per element would add its query's steps 500 times.
TEST_F(ArrayQueueTest, ARestartReadsAnArraysRowOnceNotPerElement) {
  start("fake:2");
  ASSERT_TRUE(queue_->set_draining(true));
  queue_array("first", "0-499");
  auto restart_steps = [this] {
    int64_t before = store_->vm_steps();
    restart("fake:2");
    return store_->vm_steps() - before;
  };
  int64_t one_array = restart_steps();
  queue_array("second", "0-499");
  int64_t two_arrays = restart_steps();
  for (int i = 0; i < 500; ++i) ASSERT_TRUE(queue_->submit(command("true", 0)));
  world_->run();
  int64_t and_singles = restart_steps();
  int64_t per_element = (two_arrays - one_array) / 500;
  int64_t per_single = (and_singles - two_arrays) / 500;
  EXPECT_LE(per_element, per_single + 2) << "elements " << per_element << ", singles " << per_single;
}

}  // namespace
}  // namespace gpuq::daemon::testing
