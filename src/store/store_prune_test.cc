// SPDX-License-Identifier: Apache-2.0
// Retention in the store (store_prune.cc) on a real SQLite file: which jobs are chosen, what
// goes with them, what must never go, and that ids and seqs are never given out twice.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "store/schema.h"
#include "store/store.h"
#include "store/store_fixture.h"

namespace gpuq::store {
namespace {

using PruneTest = testing::StoreFixture;
using Ids = std::vector<int64_t>;

int64_t count_rows(const std::string& path, const std::string& sql) {
  auto db = Database::open(path, true);
  EXPECT_TRUE(db);
  auto stmt = (*db)->prepare(sql);
  EXPECT_TRUE(stmt) << stmt.error().message;
  EXPECT_TRUE(stmt->step());
  return stmt->int64(0);
}

TEST_F(PruneTest, SelectsFinishedJobsBeforeTheCutoffOldestFirstWithTheirRunsAndEvents) {
  int64_t late = seed_job(JobState::kFailed, 300, 2, 3);
  int64_t early = seed_job(JobState::kSucceeded, 100, 1, 2);
  int64_t middle = seed_job(JobState::kCancelled, 200, 0, 1);
  int64_t skipped = seed_job(JobState::kSkipped, 200, 0, 0);
  seed_job(JobState::kSucceeded, 500, 1, 2);  // not before the cutoff
  seed_job(JobState::kPending);
  seed_job(JobState::kBlocked);
  seed_job(JobState::kHeld);
  auto selection = store_->select_prunable(500, {}, 100);
  ASSERT_TRUE(selection) << selection.error().message;
  EXPECT_EQ(selection->job_ids, (Ids{early, middle, skipped, late}));  // ties: by id
  EXPECT_EQ(selection->runs, 3);
  EXPECT_EQ(selection->events, 6);
  EXPECT_EQ(selection->kept_for_dependents, 0);
}

TEST_F(PruneTest, KeptJobsArePassedOverAndCountedAndTheLimitHolds) {
  Ids finished;
  for (int i = 0; i < 5; ++i) finished.push_back(seed_job(JobState::kSucceeded, 100 + i, 1, 1));
  int64_t pending = seed_job(JobState::kPending);
  int64_t recent = seed_job(JobState::kSucceeded, 900);
  // Depended on: the oldest (would go), a pending job and a recent one (would not go anyway).
  auto selection = store_->select_prunable(500, {finished[0], pending, recent}, 2);
  ASSERT_TRUE(selection) << selection.error().message;
  EXPECT_EQ(selection->job_ids, (Ids{finished[1], finished[2]}));
  EXPECT_EQ(selection->runs, 2);
  EXPECT_EQ(selection->events, 2);
  EXPECT_EQ(selection->kept_for_dependents, 1);
}

TEST_F(PruneTest, AJobWhoseCleanupIsUnconfirmedIsNeitherChosenNorDeleted) {
  int64_t attention = seed_job(JobState::kFailed, 100, 1, 1);
  int64_t done = seed_job(JobState::kSucceeded, 100, 1, 1);
  auto runs = store_->runs_of(attention);
  ASSERT_TRUE(store_->transaction([&] { return store_->set_cleanup((*runs)[0].id, CleanupState::kAttention); }));
  auto selection = store_->select_prunable(500, {}, 10);
  ASSERT_TRUE(selection);
  EXPECT_EQ(selection->job_ids, Ids{done});
  auto pruned = store_->transaction([&] { return store_->prune_jobs({done, attention}); });
  ASSERT_FALSE(pruned);
  EXPECT_NE(pruned.error().message.find(fmt::format("job {}", attention)), std::string::npos)
      << pruned.error().message;
  EXPECT_TRUE(*store_->find_job(done));  // the whole batch was refused
  EXPECT_EQ(store_->runs_in_cleanup(CleanupState::kAttention)->size(), 1u);
}

TEST_F(PruneTest, AnUnfinishedJobIsRefused) {
  int64_t finished = seed_job(JobState::kSucceeded, 100);
  int64_t running = seed_job(JobState::kRunning);
  auto pruned = store_->transaction([&] { return store_->prune_jobs({finished, running}); });
  ASSERT_FALSE(pruned);
  EXPECT_NE(pruned.error().message.find("(running)"), std::string::npos) << pruned.error().message;
  EXPECT_TRUE(*store_->find_job(finished));
  EXPECT_TRUE(*store_->find_job(running));
}

TEST_F(PruneTest, PruningDeletesTheJobsWithEveryRowThatRefersToThem) {
  // Ids 1 and 12 share a prefix: pruning job 1 must leave job 12's episode alone.
  int64_t gone = seed_job(JobState::kSucceeded, 100, 2, 2);
  ASSERT_EQ(gone, 1);
  for (int i = 0; i < 10; ++i) seed_job(JobState::kSucceeded, 900);
  int64_t other = seed_job(JobState::kRunning, 0, 0, 1);
  ASSERT_EQ(other, 12);
  int64_t daemon_seq = seed_event("daemon.started", 50);
  ASSERT_TRUE(store_->put_episode({"job.quiet:1", "job.quiet", 1, 1, R"({"job":1})"}));
  ASSERT_TRUE(store_->put_episode({"job.quiet:12", "job.quiet", 1, 1, R"({"job":12})"}));
  ASSERT_TRUE(store_->put_episode({"queue.idle_with_work", "queue.idle_with_work", 1, 1, "{}"}));
  ASSERT_TRUE(store_->transaction([&] { return store_->prune_jobs({gone}); }));

  EXPECT_FALSE(*store_->find_job(gone));
  EXPECT_TRUE(store_->runs_of(gone)->empty());
  EXPECT_TRUE(*store_->find_job(other));
  auto events = store_->events_after(0, 100);
  ASSERT_TRUE(events);
  for (const Event& e : *events) EXPECT_NE(e.job, std::optional<int64_t>(gone)) << e.kind;
  ASSERT_EQ(events->size(), 2u);  // job 12's and the daemon's
  EXPECT_EQ((*events)[0].job, std::optional<int64_t>(other));
  EXPECT_EQ((*events)[1].seq, daemon_seq);
  auto episodes = store_->episodes();
  ASSERT_EQ(episodes->size(), 2u);
  EXPECT_EQ((*episodes)[0].key, "job.quiet:12");
  EXPECT_EQ((*episodes)[1].key, "queue.idle_with_work");
  EXPECT_EQ(count_rows(path_, "SELECT COUNT(*) FROM pragma_foreign_key_check"), 0);
}

TEST_F(PruneTest, MetricsCountersKeepWhatWasPruned) {
  int64_t gone = seed_job(JobState::kSucceeded, 100, 2, 3);
  seed_job(JobState::kSucceeded, 900, 1, 1);
  seed_event("daemon.started", 50);
  auto events_before = store_->event_counts();
  auto runs_before = store_->run_counts();
  ASSERT_TRUE(store_->transaction([&]() -> Status {
    if (auto st = store_->prune_jobs({gone}); !st) return st;
    auto removed = store_->prune_events(500, 1'000);
    if (!removed) return tl::unexpected(removed.error());
    return ok();
  }));
  EXPECT_EQ(count_rows(path_, "SELECT COUNT(*) FROM events"), 1);  // the other job's
  EXPECT_EQ(*store_->event_counts(), *events_before);
  EXPECT_EQ(*store_->run_counts(), *runs_before);
  EXPECT_EQ(*store_->run_counts(), (Store::Counts{{"succeeded", 3}}));
}

TEST_F(PruneTest, PruneEventsTakesOnlyOldJoblessEventsUpToTheCursor) {
  seed_job(JobState::kSucceeded, 100, 0, 1);  // a job's event, old: it goes with its job only
  int64_t job_event = *store_->last_seq();
  seed_event("daemon.started", 100);
  int64_t cursor = seed_event("queue.idle_with_work", 200);
  int64_t undelivered = seed_event("resource.foreign", 300);  // after the hook's cursor
  int64_t recent = seed_event("daemon.stopped", 900);
  Result<int64_t> removed = 0;
  ASSERT_TRUE(store_->transaction([&]() -> Status {
    removed = store_->prune_events(500, cursor);
    if (!removed) return tl::unexpected(removed.error());
    return ok();
  }));
  EXPECT_EQ(*removed, 2);
  auto events = store_->events_after(0, 100);
  ASSERT_TRUE(events);
  Ids left;
  for (const Event& e : *events) left.push_back(e.seq);
  EXPECT_EQ(left, (Ids{job_event, undelivered, recent}));
}

TEST_F(PruneTest, EventSeqsAreNeverReusedAfterTheNewestArePruned) {
  seed_event("daemon.started", 100);
  int64_t newest = seed_event("daemon.stopped", 100);
  ASSERT_TRUE(store_->transaction([&]() -> Status {
    auto removed = store_->prune_events(500, newest);
    if (!removed) return tl::unexpected(removed.error());
    return ok();
  }));
  EXPECT_EQ(*store_->last_seq(), 0);
  EXPECT_EQ(seed_event("daemon.started", 1000), newest + 1);
}

// A pruned job's id (its directory jobs/ID, its `gpuq show ID`) must never name a new job.
TEST_F(PruneTest, JobIdsAreNeverReusedAfterTheNewestIsDeleted) {
  seed_job(JobState::kSucceeded, 100);
  int64_t newest = seed_job(JobState::kSucceeded, 100);
  {
    auto db = Database::open(path_, false);
    ASSERT_TRUE(db);
    ASSERT_TRUE((*db)->exec(fmt::format("DELETE FROM jobs WHERE id = {}", newest)));
  }
  EXPECT_EQ(seed_job(JobState::kPending), newest + 1);
}

TEST_F(PruneTest, AVersionSixStoreKeepsItsJobsRunsAndIdsWhenMigrated) {
  store_.reset();
  std::filesystem::remove(path_);
  {
    auto db = Database::open(path_, false);
    ASSERT_TRUE(db);
    ASSERT_TRUE(migrate(**db, 6));
    ASSERT_TRUE((*db)->exec(
        "INSERT INTO jobs(id, name, state, priority, queue_order, gpus, spec, submitted_at, "
        "finished_at, retry_at, retry_base, conditions_false_since) VALUES "
        "(1, 'a', 'succeeded', 50, 1, 0, '{\"cwd\":\"/\",\"argv\":[\"true\"]}', 5, 9, 0, 0, 0), "
        "(7, NULL, 'pending', 10, 2, 1, '{\"cwd\":\"/\",\"argv\":[\"true\"]}', 6, NULL, 4, 1, 3);"
        "INSERT INTO runs(job_id, number, gpus, gpu_indices, shim_pid, shim_start_ticks, "
        "started_at, ended_at, outcome, run_dir) VALUES (1, 1, '[]', '[]', 1, 1, 6, 8, "
        "'succeeded', '/r');"));
  }
  auto reopened = Store::open(path_, false);
  ASSERT_TRUE(reopened) << reopened.error().message;
  Store& store = **reopened;
  auto first = store.find_job(1);
  ASSERT_TRUE(first && *first);
  EXPECT_EQ((*first)->spec.name, "a");
  EXPECT_EQ((*first)->finished_at_ms, 9);
  ASSERT_EQ((*first)->runs.size(), 1u);
  auto pending = store.find_job(7);
  ASSERT_TRUE(pending && *pending);
  EXPECT_EQ((*pending)->retry_at_ms, 4);
  EXPECT_EQ((*pending)->retry_base, 1);
  EXPECT_EQ((*pending)->conditions_false_since_ms, 3);
  EXPECT_EQ((*pending)->queue_order, 2);
  // The newest id is remembered: deleting job 7 does not let a new job take it.
  ASSERT_TRUE(store.transaction([&]() -> Status {
    if (auto st = store.set_job_state(7, JobState::kCancelled, "", 10); !st) return st;
    return store.prune_jobs({7});
  }));
  Job next;
  next.spec.cwd = "/";
  next.spec.argv = {"true"};
  auto id = store.insert_job(next);
  ASSERT_TRUE(id);
  EXPECT_EQ(*id, 8);
  EXPECT_EQ(count_rows(path_, "SELECT COUNT(*) FROM pragma_foreign_key_check"), 0);
}

// With a history forty times longer, choosing a batch costs about the same.
TEST_F(PruneTest, ChoosingABatchDoesNotReadTheWholeHistory) {
  auto cost = [&](int finished) {
    auto steps = store_->vm_steps();
    auto selection = store_->select_prunable(1'000'000, {}, 10);
    EXPECT_TRUE(selection);
    EXPECT_EQ(selection->job_ids.size(), std::min(10, finished));
    return store_->vm_steps() - steps;
  };
  seed_history(50, 1000);
  int64_t small = cost(50);
  seed_history(1950, 2000);
  int64_t large = cost(2000);
  EXPECT_LT(large, small * 3 / 2) << "steps with 50 finished jobs: " << small;
}

}  // namespace
}  // namespace gpuq::store
