// SPDX-License-Identifier: Apache-2.0
// Retention through the queue actor on a FakeWorld: what goes, what stays, and when.
#include "daemon/queue_test_support.h"

namespace gpuq::daemon::testing {
namespace {

constexpr int64_t kHour = 3'600'000;

class GcTest : public QueueTest {
 protected:
  void SetUp() override {
    QueueTest::SetUp();
    config_.retention_keep_ms = kHour;
    options_.scheduled_prunes = false;  // each test asks for its prune, but the last one
  }
  // Runs a job to success now; returns its id.
  int64_t finished_job() {
    int64_t id = submit(command("true", 0));
    end_run(id, 1, exited(0));
    EXPECT_EQ(state(id), JobState::kSucceeded);
    return id;
  }
  Result<GcReport> gc(bool dry_run) {
    std::optional<Result<GcReport>> out;
    queue_->gc(dry_run, [&](Result<GcReport> r) { out = std::move(r); });
    world_->run();
    EXPECT_TRUE(out.has_value()) << "the prune never finished";
    return out ? *out : fail(Code::kInternal, "none");
  }
  bool exists(int64_t id) {
    auto found = store_->find_job(id, false);
    return found && found->has_value();
  }
};

TEST_F(GcTest, FinishedJobsOlderThanKeepGoWithTheirDirectoriesAndEvents) {
  start();
  int64_t old_job = finished_job();
  world_->set_tree_size(layout().job_dir(old_job), 4096);
  world_->advance(kHour - 1);
  int64_t young = finished_job();
  world_->advance(2);  // the old one finished more than an hour ago now; the young one not
  auto report = gc(false);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->jobs, 1);
  EXPECT_EQ(report->job_ids, std::vector<int64_t>{old_job});
  EXPECT_EQ(report->runs, 1);
  EXPECT_EQ(report->run_dirs, 1);
  EXPECT_EQ(report->bytes, 4096);
  EXPECT_GE(report->events, 3);
  EXPECT_FALSE(exists(old_job));
  EXPECT_TRUE(exists(young)) << "finished less than `keep` ago";
  EXPECT_EQ(world_->removed_trees(), std::vector<std::string>{layout().job_dir(old_job)});
  EXPECT_EQ(count("job.submitted", old_job), 0) << "its events went with it";
  EXPECT_EQ(count("daemon.pruned"), 1);
  // The actor forgot it too: a dependency on it is now one on a job that does not exist.
  JobSpec child = command("true", 0);
  child.deps.push_back({Dependency::Kind::kAfterOk, std::to_string(old_job), 0});
  auto refused = queue_->submit(child);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("does not exist"), std::string::npos);
}

TEST_F(GcTest, AJobAnUnfinishedJobDependsOnStays) {
  start();
  int64_t parent = finished_job();
  JobSpec child = command("true", 0);
  child.hold = true;
  child.deps.push_back({Dependency::Kind::kAfterOk, std::to_string(parent), 0});
  int64_t held = submit(child);
  world_->advance(2 * kHour);
  auto report = gc(false);
  ASSERT_TRUE(report);
  EXPECT_EQ(report->jobs, 0);
  EXPECT_EQ(report->kept_for_dependents, 1);
  EXPECT_TRUE(exists(parent));
  ASSERT_TRUE(queue_->release(held));
  world_->run();
  EXPECT_EQ(state(held), JobState::kRunning) << "its dependency still answers";
}

TEST_F(GcTest, ADryRunRemovesNothing) {
  start();
  int64_t id = finished_job();
  world_->set_tree_size(layout().job_dir(id), 100);
  world_->advance(2 * kHour);
  auto report = gc(true);
  ASSERT_TRUE(report);
  EXPECT_TRUE(report->dry_run);
  EXPECT_EQ(report->jobs, 1);
  EXPECT_EQ(report->bytes, 100);
  EXPECT_TRUE(exists(id));
  EXPECT_TRUE(world_->removed_trees().empty());
  EXPECT_EQ(count("daemon.pruned"), 0);
}

TEST_F(GcTest, EventsAHookHasNotDeliveredHoldTheirJobsBack) {
  start();
  int64_t id = finished_job();
  queue_->set_event_floor([] { return int64_t{1}; });  // a hook stuck at the first event
  world_->advance(2 * kHour);
  auto report = gc(false);
  ASSERT_TRUE(report);
  EXPECT_EQ(report->jobs, 0);
  EXPECT_TRUE(report->waiting_for_hooks);
  EXPECT_TRUE(exists(id));
  queue_->set_event_floor([] { return INT64_MAX; });
  ASSERT_TRUE(gc(false));
  EXPECT_FALSE(exists(id));
}

TEST_F(GcTest, KeepForeverPrunesNothing) {
  config_.retention_keep_ms = 0;
  start();
  int64_t id = finished_job();
  world_->advance(1000 * kHour);
  auto report = gc(false);
  ASSERT_TRUE(report);
  EXPECT_EQ(report->keep_ms, 0);
  EXPECT_EQ(report->jobs, 0);
  EXPECT_TRUE(exists(id));
  EXPECT_EQ(gc_report_to_json(*report)["keep"], "forever");
}

TEST_F(GcTest, TheDaemonPrunesByItselfAMinuteAfterItsStartThenHourly) {
  options_.scheduled_prunes = true;
  start();
  int64_t first = finished_job();
  world_->advance(kHour + 60'000 - 1);
  EXPECT_TRUE(exists(first)) << "not before the first prune is due";
  world_->advance(1);
  EXPECT_FALSE(exists(first));
  int64_t second = finished_job();
  world_->advance(2 * kHour);
  EXPECT_FALSE(exists(second));
  // Two prunes removed a job each; the first one's event was itself older than `keep` by the
  // second, and went with the rest of the history.
  EXPECT_EQ(count("daemon.pruned"), 1);
  EXPECT_EQ(last_data("daemon.pruned")["jobs"], 1);
}

TEST_F(GcTest, AHistoryLongerThanABatchIsPrunedInSeveralTransactions) {
  start();
  std::vector<int64_t> ids;
  for (int i = 0; i < 1001; ++i) ids.push_back(finished_job());
  world_->advance(2 * kHour);
  int commits = world_->commits();
  auto report = gc(false);
  ASSERT_TRUE(report);
  EXPECT_EQ(report->jobs, 1001);
  EXPECT_EQ(report->job_ids.size(), 100u);
  EXPECT_GE(world_->commits() - commits, 2) << "one transaction per batch of 1000";
  EXPECT_FALSE(exists(ids.back()));
}

}  // namespace
}  // namespace gpuq::daemon::testing
