// SPDX-License-Identifier: Apache-2.0
// The ready index on its own (order, marks, wake times, merges), and the queue actor's
// incremental readiness against a full evaluation of every job over random operations.
#include "daemon/ready_index.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <random>

#include "daemon/queue_test_support.h"
#include "sched/order.h"

namespace gpuq::daemon {
namespace {

ActiveJob job_at(int64_t id, int priority, int64_t order) {
  ActiveJob job;
  job.id = id;
  job.priority = priority;
  job.queue_order = order;
  job.gpus = 1;
  return job;
}

std::vector<int64_t> ids_of(const std::vector<sched::PendingJob>& queue) {
  std::vector<int64_t> ids;
  for (const auto& job : queue) ids.push_back(job.id);
  return ids;
}

// Lends the queue, reads its ids and gives it back, as a pass does.
std::vector<int64_t> ready_ids(ReadyIndex& index) {
  auto queue = index.lend_queue();
  auto ids = ids_of(queue);
  index.return_queue(std::move(queue));
  return ids;
}

TEST(ReadyIndex, ReadyJobsComeInPriorityThenQueueOrder) {
  ReadyIndex index;
  index.set_ready(job_at(1, 50, 3000));
  index.set_ready(job_at(2, 10, 4000));
  index.set_ready(job_at(3, 50, 1000));
  EXPECT_EQ(ready_ids(index), (std::vector<int64_t>{2, 3, 1}));
}

TEST(ReadyIndex, AMovedJobKeepsItsNewPlace) {
  ReadyIndex index;
  for (int64_t id = 1; id <= 4; ++id) index.set_ready(job_at(id, 50, id * 1024));
  ASSERT_EQ(ready_ids(index), (std::vector<int64_t>{1, 2, 3, 4}));
  index.set_ready(job_at(4, 50, 512));  // moved to the top
  EXPECT_EQ(ready_ids(index), (std::vector<int64_t>{4, 1, 2, 3}));
  index.set_ready(job_at(1, 90, 1024));  // moved to a worse priority
  EXPECT_EQ(ready_ids(index), (std::vector<int64_t>{4, 2, 3, 1}));
  EXPECT_EQ(ready_ids(index), (std::vector<int64_t>{4, 2, 3, 1}));  // unchanged when lent again
}

TEST(ReadyIndex, AHeldOrRemovedJobLeavesTheReadyJobs) {
  ReadyIndex index;
  for (int64_t id = 1; id <= 3; ++id) {
    index.add(job_at(id, 50, id * 1024));
    index.set_ready(job_at(id, 50, id * 1024));
  }
  ready_ids(index);
  index.set_not_ready(2);  // held
  EXPECT_FALSE(index.ready(2));
  EXPECT_EQ(ready_ids(index), (std::vector<int64_t>{1, 3}));
  index.remove(3);  // finished
  EXPECT_EQ(ready_ids(index), (std::vector<int64_t>{1}));
  EXPECT_EQ(index.ready_count(), 1u);
}

TEST(ReadyIndex, AChangedJobMarksItsDependents) {
  ReadyIndex index;
  ActiveJob parent = job_at(1, 50, 1024);
  ActiveJob child = job_at(2, 50, 2048);
  child.rare.edit().deps.push_back({Dependency::Kind::kAfterOk, "1", 1});
  ActiveJob other = job_at(3, 50, 3072);
  index.add(parent);
  index.add(child);
  index.add(other);
  EXPECT_EQ(index.take(0), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_TRUE(index.take(0).empty());
  index.mark(1);  // the parent's state changed
  EXPECT_EQ(index.take(0), (std::vector<int64_t>{1, 2}));
  index.remove(1);  // the parent finished: its dependent is decided again
  EXPECT_EQ(index.take(0), (std::vector<int64_t>{2}));
  index.remove(2);
  index.mark(1);  // a pruned job: nothing depends on it any more
  EXPECT_EQ(index.take(0), (std::vector<int64_t>{1}));
}

TEST(ReadyIndex, AWakeTimeMarksTheJobWhenItComes) {
  ReadyIndex index;
  index.add(job_at(7, 50, 1024));
  index.take(0);
  index.wake_at(7, 5000);
  EXPECT_EQ(index.next_wake_ms(), 5000);
  EXPECT_FALSE(index.due(7, 4999));
  EXPECT_TRUE(index.take(4999).empty());
  EXPECT_TRUE(index.due(7, 5000));
  EXPECT_EQ(index.take(5000), (std::vector<int64_t>{7}));
  // A later time replaces an earlier one: the earlier entry wakes nothing.
  index.wake_at(7, 6000);
  index.wake_at(7, 8000);
  EXPECT_TRUE(index.take(7000).empty());
  EXPECT_EQ(index.take(8000), (std::vector<int64_t>{7}));
}

TEST(ReadyIndex, ReservationsAreInUseWhileAJobOfThemIsTracked) {
  ReadyIndex index;
  ActiveJob job = job_at(1, 50, 1024);
  job.reservation = 1;
  index.add(job);
  EXPECT_FALSE(index.reservation_in_use(0));
  EXPECT_TRUE(index.reservation_in_use(1));
  index.remove(1);
  EXPECT_FALSE(index.reservation_in_use(1));
}

// Random readiness changes against a plain ordered map: the lent queue is always its order.
TEST(ReadyIndex, MergesAgreeWithAnOrderedMap) {
  std::mt19937 random(13);
  ReadyIndex index;
  std::map<std::tuple<int, int64_t, int64_t>, int64_t> model;
  std::map<int64_t, std::tuple<int, int64_t, int64_t>> key_of;
  for (int step = 0; step < 3000; ++step) {
    int64_t id = 1 + random() % 200;
    if (random() % 3 == 0) {
      index.set_not_ready(id);
      if (auto k = key_of.find(id); k != key_of.end()) {
        model.erase(k->second);
        key_of.erase(k);
      }
    } else {
      ActiveJob job = job_at(id, 10 * static_cast<int>(random() % 5), static_cast<int64_t>(random() % 50) * 1024);
      index.set_ready(job);
      if (auto k = key_of.find(id); k != key_of.end()) model.erase(k->second);
      key_of[id] = {job.priority, job.queue_order, id};
      model[key_of[id]] = id;
    }
    if (random() % 7 == 0) {
      std::vector<int64_t> expected;
      for (const auto& [key, job_id] : model) expected.push_back(job_id);
      ASSERT_EQ(ready_ids(index), expected) << "step " << step;
    }
  }
}

// The hints a pass takes without reading the queue (sched::Snapshot): the lent queue is in
// scheduling order, and "one owner" holds exactly when its jobs have one owner, over random
// changes of who owns what.
TEST(ReadyIndex, TheLentQueuesHintsHold) {
  std::mt19937 random(29);
  ReadyIndex index;
  int one = 0, several = 0;
  for (int step = 0; step < 3000; ++step) {
    int64_t id = 1 + random() % 100;
    if (random() % 3 == 0) {
      index.set_not_ready(id);
    } else {
      ActiveJob job = job_at(id, 10 * static_cast<int>(random() % 5), static_cast<int64_t>(random() % 50) * 1024);
      // Mostly one owner, so that both answers come up.
      job.owner = random() % 40 == 0 ? static_cast<int>(random() % 3) - 1 : 1;
      index.set_ready(job);
    }
    if (random() % 5 == 0) {
      auto queue = index.lend_queue();
      std::set<int> owners;
      for (const auto& job : queue) owners.insert(job.owner);
      EXPECT_EQ(index.lent_queue_has_one_owner(), owners.size() <= 1) << "step " << step;
      (owners.size() <= 1 ? one : several) += 1;
      EXPECT_TRUE(sched::in_scheduling_order(queue, sched::Policy::kBackfill)) << "step " << step;
      index.return_queue(std::move(queue));
    }
  }
  EXPECT_GT(one, 0);
  EXPECT_GT(several, 0);
}

class IncrementalReadiness : public testing::QueueTest {
 protected:
  void expect_agrees(const std::string& after) {
    auto differences = queue_->readiness_differences();
    EXPECT_TRUE(differences.empty()) << after << ": " << ::testing::PrintToString(differences);
  }
  std::vector<int64_t> waiting_in_order() {
    std::vector<int64_t> ids;
    for (const auto& wait : queue_->waits()->waits) ids.push_back(wait.job_id);
    return ids;
  }
};

TEST_F(IncrementalReadiness, AJobWhoseDependencyFinishesStarts) {
  start("fake:1");
  int64_t parent = submit(command("true"));
  JobSpec spec = command("true");
  spec.deps.push_back({Dependency::Kind::kAfterOk, std::to_string(parent), parent});
  int64_t child = submit(spec);
  EXPECT_EQ(queue_->waits()->reason(child, world_->now()), "waiting for job " + std::to_string(parent) + " (running)");
  expect_agrees("parent running");
  end_run(parent, 1, exited(0));
  EXPECT_EQ(state(child), JobState::kRunning);
  expect_agrees("child started");
}

TEST_F(IncrementalReadiness, HeldAndMovedJobsTakeTheirPlaces) {
  start("fake:1");
  ASSERT_TRUE(queue_->set_draining(true));
  int64_t a = submit(command("true"));
  int64_t b = submit(command("true"));
  int64_t c = submit(command("true"));
  world_->run();
  EXPECT_EQ(waiting_in_order(), (std::vector<int64_t>{a, b, c}));
  ASSERT_TRUE(queue_->hold(b));
  world_->run();
  EXPECT_EQ(waiting_in_order(), (std::vector<int64_t>{a, c}));
  MoveRequest top;
  top.where = MoveRequest::Where::kTop;
  ASSERT_TRUE(queue_->move(c, top));
  world_->run();
  EXPECT_EQ(waiting_in_order(), (std::vector<int64_t>{c, a}));
  ASSERT_TRUE(queue_->release(b));
  world_->run();
  EXPECT_EQ(waiting_in_order(), (std::vector<int64_t>{c, a, b}));
  expect_agrees("released");
}

TEST_F(IncrementalReadiness, AJobStartsWhenItsNotBeforeTimeComes) {
  start("fake:1");
  JobSpec spec = command("true");
  spec.not_before_ms = world_->now() + 60'000;
  int64_t later = submit(spec);
  EXPECT_EQ(state(later), JobState::kPending);
  expect_agrees("before its time");
  world_->advance(60'000);
  world_->run();
  EXPECT_EQ(state(later), JobState::kRunning);
}

// Random submits (with dependencies, holds, not-before times, priorities), holds, releases,
// moves, cancels, run ends, retries and time: after each, the incremental state agrees with a
// full evaluation of every job.
TEST_F(IncrementalReadiness, AgreesWithAFullEvaluationOverRandomOperations) {
  config_.retry_delay_ms = 5'000;
  start("fake:3");
  std::mt19937 random(4);
  std::vector<int64_t> ids;
  auto any = [&] { return ids[random() % ids.size()]; };
  for (int step = 0; step < 400; ++step) {
    int op = ids.empty() ? 0 : static_cast<int>(random() % 9);
    std::string what;
    switch (op) {
      case 0:
      case 1: {
        JobSpec spec = command("true", static_cast<int>(random() % 3));
        spec.priority = 10 + 20 * static_cast<int>(random() % 4);
        spec.hold = random() % 8 == 0;
        spec.retries = static_cast<int>(random() % 2);
        if (random() % 6 == 0) spec.not_before_ms = world_->now() + 1000 * static_cast<int64_t>(random() % 20);
        if (!ids.empty() && random() % 2 == 0) {
          int64_t target = any();
          auto kind = static_cast<Dependency::Kind>(random() % 3);
          spec.deps.push_back({kind, std::to_string(target), target});
        }
        auto submitted = queue_->submit(std::move(spec));
        if (submitted) ids.push_back(submitted->job.id);
        what = "submit";
        break;
      }
      case 2: (void)queue_->hold(any()); what = "hold"; break;
      case 3: (void)queue_->release(any()); what = "release"; break;
      case 4: {
        MoveRequest request;
        request.where = static_cast<MoveRequest::Where>(random() % 5);
        request.other = any();
        request.priority = 10 + 20 * static_cast<int>(random() % 4);
        (void)queue_->move(any(), request);
        what = "move";
        break;
      }
      case 5: (void)queue_->cancel(any()); what = "cancel"; break;
      case 6: {
        int64_t id = any();
        Job j = job(id);
        if (j.state == JobState::kRunning && !j.runs.empty()) {
          world_->exit_shim(run_dir(id, j.runs.back().number), exited(random() % 3 == 0 ? 1 : 0));
        }
        what = "end a run";
        break;
      }
      case 7: (void)queue_->retry(any()); what = "retry"; break;
      case 8: world_->advance(500 + random() % 3000); what = "time"; break;
    }
    world_->run();
    expect_agrees("step " + std::to_string(step) + " (" + what + ")");
    if (HasFailure()) return;
  }
}

// What the daemon keeps per queued job has no padding between fields (the sizes of x86-64 with
// libstdc++, Debian 12's): each of a million queued jobs has an ActiveJob, a PendingJob in the
// ready queue and a Wait in each of the pass's two published lists. A field added in the wrong
// place shows here.
TEST(PerJobRecords, HaveNoPaddingBetweenTheirFields) {
  EXPECT_EQ(sizeof(ActiveJob), 152u);
  EXPECT_EQ(sizeof(sched::PendingJob), 88u);
  EXPECT_EQ(sizeof(sched::Wait), 56u);
}

// The fields few jobs have cost a job without them one null pointer: reading gives the
// defaults and allocates nothing; the first edit makes them; a copy is a copy, not a share.
TEST(PerJobRecords, RareFieldsAreMadeOnlyWhenWritten) {
  ActiveJob job;
  EXPECT_FALSE(job.rare.present());
  EXPECT_EQ(job.rare->requires_warn_ms, -1);
  EXPECT_EQ(job.rare->start_failures, 0);
  EXPECT_FALSE(job.rare.present());
  job.rare.edit().start_failures = 2;
  ASSERT_TRUE(job.rare.present());
  ActiveJob copy = job;
  copy.rare.edit().start_failures = 5;
  EXPECT_EQ(job.rare->start_failures, 2);
  EXPECT_EQ(copy.rare->start_failures, 5);
  ActiveJob moved = std::move(copy);
  EXPECT_EQ(moved.rare->start_failures, 5);
}

}  // namespace
}  // namespace gpuq::daemon
