// SPDX-License-Identifier: Apache-2.0
// The dashboard's store reads and writes (store_usage.cc, schema 9) on a real SQLite file: the
// submitter and seen GPUs kept, samples written and pruned with their runs, a page of the
// queue in serving order, the runs overlapping a window, job-less events by kind and time.
#include <gtest/gtest.h>

#include "store/store.h"
#include "store/store_fixture.h"

namespace gpuq::store {
namespace {

using Ids = std::vector<int64_t>;

class UsageStore : public testing::StoreFixture {
 protected:
  int64_t job(JobState state, int priority, int64_t order, std::string user = "ann") {
    Job j;
    j.state = state;
    j.spec.cwd = "/tmp";
    j.spec.argv = {"true"};
    j.spec.priority = priority;
    j.spec.user = std::move(user);
    j.queue_order = order;
    j.submitted_at_ms = 100;
    int64_t id = 0;
    EXPECT_TRUE(store_->transaction([&]() -> Status {
      auto inserted = store_->insert_job(j);
      if (!inserted) return tl::unexpected(inserted.error());
      id = *inserted;
      return ok();
    }));
    return id;
  }
  // A run of `job` from `start` to `end` (0: still running); returns its row id.
  int64_t run(int64_t job_id, int number, int64_t start, int64_t end,
              RunOutcome outcome = RunOutcome::kSucceeded) {
    gpuq::Run r;
    r.job_id = job_id;
    r.number = number;
    r.gpus = {"gpu0", "gpu1"};
    r.gpu_indices = {0, 1};
    r.started_at_ms = start;
    r.run_dir = "/runs";
    int64_t row = 0;
    EXPECT_TRUE(store_->transaction([&]() -> Status {
      auto inserted = store_->insert_run(r, "train");
      if (!inserted) return tl::unexpected(inserted.error());
      row = *inserted;
      if (end == 0) return ok();
      if (auto st = store_->finish_run(row, end, 0, std::nullopt, outcome); !st) return st;
      return store_->set_cleanup(row, CleanupState::kDone);
    }));
    return row;
  }
};

Ids ids_of(const std::vector<Job>& jobs) {
  Ids out;
  for (const Job& j : jobs) out.push_back(j.id);
  return out;
}

TEST_F(UsageStore, KeepsTheSubmitterAndTheGpusARunWasSeenOn) {
  int64_t id = job(JobState::kPending, 50, 1024, "bob");
  int64_t row = run(id, 1, 10, 0);
  ASSERT_TRUE(store_->transaction([&] { return store_->set_seen_gpus(row, {"gpu0", "gpu3"}, {0, 3}); }));
  auto found = store_->find_job(id, true);
  ASSERT_TRUE(found && *found);
  EXPECT_EQ((*found)->spec.user, "bob");
  ASSERT_EQ((*found)->runs.size(), 1u);
  EXPECT_EQ((*found)->runs[0].seen_gpus, (std::vector<std::string>{"gpu0", "gpu3"}));
  EXPECT_EQ((*found)->runs[0].seen_gpu_indices, (std::vector<int>{0, 3}));
}

TEST_F(UsageStore, SamplesAreReadByRunAndWindowAndPrunedWithTheirRuns) {
  int64_t id = job(JobState::kPending, 50, 1024);
  int64_t row = run(id, 1, 10, 0);
  int64_t other = run(job(JobState::kPending, 50, 2048), 1, 10, 0);
  ASSERT_TRUE(store_->transaction([&]() -> Status {
    for (int64_t t : {1000, 31000, 61000}) {
      if (auto st = store_->add_run_sample(row, {t, 40, 512}); !st) return st;
    }
    if (auto st = store_->add_run_sample(row, {61000, -1, 600}); !st) return st;  // replaces
    return store_->add_run_sample(other, {1000, 5, 0});
  }));
  auto samples = store_->run_samples({row}, 0, 100'000);
  ASSERT_TRUE(samples) << samples.error().message;
  ASSERT_EQ(samples->size(), 1u);
  EXPECT_EQ(samples->at(row), (std::vector<RunSample>{{1000, 40, 512}, {31000, 40, 512}, {61000, -1, 600}}));
  samples = store_->run_samples({row, other}, 30'000, 61'000);
  ASSERT_TRUE(samples);
  EXPECT_EQ(samples->at(row), (std::vector<RunSample>{{31000, 40, 512}}));
  EXPECT_FALSE(samples->count(other));

  ASSERT_TRUE(store_->transaction([&]() -> Status {
    if (auto st = store_->finish_run(row, 70'000, 0, std::nullopt, RunOutcome::kSucceeded); !st) return st;
    if (auto st = store_->set_cleanup(row, CleanupState::kDone); !st) return st;
    return store_->set_job_state(id, JobState::kSucceeded, "", 70'000);
  }));
  ASSERT_TRUE(store_->transaction([&] { return store_->prune_jobs({id}); }));
  samples = store_->run_samples({row, other}, 0, 100'000);
  ASSERT_TRUE(samples);
  EXPECT_FALSE(samples->count(row));
  EXPECT_EQ(samples->at(other).size(), 1u);
}

TEST_F(UsageStore, AQueuePageIsInServingOrder) {
  int64_t late = job(JobState::kPending, 50, 3 * 1024);
  int64_t early = job(JobState::kPending, 50, 1 * 1024);
  int64_t urgent = job(JobState::kPending, 10, 9 * 1024);
  int64_t held = job(JobState::kHeld, 10, 4 * 1024);
  int64_t low = job(JobState::kPending, 90, 2 * 1024);
  int64_t running = job(JobState::kRunning, 50, 5 * 1024);
  run(running, 1, 10, 0);
  int64_t done = seed_job(JobState::kSucceeded, 5);

  auto page = store_->queue_page(0, 2, false);
  ASSERT_TRUE(page) << page.error().message;
  EXPECT_TRUE(page->finished.empty());
  EXPECT_EQ(ids_of(page->pending), (Ids{urgent, early}));
  EXPECT_EQ(ids_of(page->others), (Ids{held, running}));
  EXPECT_EQ(page->others[1].runs.size(), 1u);
  EXPECT_EQ(page->pending_total, 4);
  EXPECT_EQ(page->finished_total, 1);
  EXPECT_EQ(store_->active_count().value_or(-1), 6);
  page = store_->queue_page(2, 10, false, 10);
  ASSERT_TRUE(page);
  EXPECT_EQ(ids_of(page->finished), (Ids{done}));
  EXPECT_EQ(ids_of(page->pending), (Ids{late, low}));
  page = store_->queue_page(1, 2, true);  // FIFO: queue order alone
  ASSERT_TRUE(page);
  EXPECT_EQ(ids_of(page->pending), (Ids{low, late}));
  page = store_->queue_page(10, 2, false);
  ASSERT_TRUE(page);
  EXPECT_TRUE(page->pending.empty());
  EXPECT_EQ(page->pending_total, 4);
}

// With a limit, a page lists every running job but only the oldest held and blocked ones, and
// counts them all: a million held jobs cost `gpuq status` a page, not a million lines.
TEST_F(UsageStore, AQueuePageListsTheOldestHeldAndBlockedJobsAndCountsThemAll) {
  Ids held, blocked;
  for (int i = 0; i < 5; ++i) {
    held.push_back(job(JobState::kHeld, 50, 10 + i));
    blocked.push_back(job(JobState::kBlocked, 50, 20 + i));
  }
  int64_t running = job(JobState::kRunning, 50, 30);
  int64_t pending = job(JobState::kPending, 50, 40);
  auto page = store_->queue_page(0, 10, false, 0, nullptr, 2);
  ASSERT_TRUE(page) << page.error().message;
  EXPECT_EQ(ids_of(page->others), (Ids{held[0], blocked[0], held[1], blocked[1], running}));
  EXPECT_EQ(page->held_total, 5);
  EXPECT_EQ(page->blocked_total, 5);
  EXPECT_EQ(ids_of(page->pending), Ids{pending});
  // A limit of 0 lists none of them; no limit lists every one.
  page = store_->queue_page(0, 10, false, 0, nullptr, 0);
  ASSERT_TRUE(page);
  EXPECT_EQ(ids_of(page->others), Ids{running});
  EXPECT_EQ(page->held_total, 5);
  page = store_->queue_page(0, 10, false);
  ASSERT_TRUE(page);
  EXPECT_EQ(page->others.size(), 11u);
  EXPECT_EQ(page->blocked_total, 5);
  // Collapsed (no array here): the same jobs, through jobs_waiting_single.
  Ids no_arrays;
  page = store_->queue_page(0, 10, false, 0, &no_arrays, 3);
  ASSERT_TRUE(page) << page.error().message;
  EXPECT_EQ(ids_of(page->others), (Ids{held[0], blocked[0], held[1], blocked[1], held[2], blocked[2], running}));
  EXPECT_EQ(page->held_total, 5);
  EXPECT_EQ(page->blocked_total, 5);
}

TEST_F(UsageStore, TheRunsOfAWindowAreThoseThatOverlapIt) {
  int64_t a = job(JobState::kSucceeded, 50, 1024, "ann");
  int64_t b = job(JobState::kRunning, 50, 2048, "bob");
  run(a, 1, 100, 200, RunOutcome::kFailed);  // ends before the window
  int64_t across = run(a, 2, 250, 1200);     // starts before, ends inside
  int64_t inside = run(a, 3, 1300, 1400, RunOutcome::kTimedOut);
  run(a, 4, 2000, 2100);                     // starts after
  int64_t live = run(b, 1, 500, 0);          // still running
  auto runs = store_->usage_runs(1000, 2000);
  ASSERT_TRUE(runs) << runs.error().message;
  ASSERT_EQ(runs->size(), 3u);
  EXPECT_EQ((*runs)[0].run_id, across);
  EXPECT_EQ((*runs)[1].run_id, live);
  EXPECT_EQ((*runs)[2].run_id, inside);
  EXPECT_EQ((*runs)[0].name, "train");
  EXPECT_EQ((*runs)[0].user, "ann");
  EXPECT_EQ((*runs)[0].gpus, (std::vector<std::string>{"gpu0", "gpu1"}));
  EXPECT_EQ((*runs)[1].user, "bob");
  EXPECT_EQ((*runs)[1].ended_at_ms, 0);
  EXPECT_EQ((*runs)[1].outcome, RunOutcome::kRunning);
  EXPECT_EQ((*runs)[2].outcome, RunOutcome::kTimedOut);
  EXPECT_EQ((*runs)[2].number, 3);
  EXPECT_EQ((*runs)[2].submitted_at_ms, 100);
}

TEST_F(UsageStore, JoblessEventsOfAKindWithTheLatestBeforeTheWindow) {
  seed_event("queue.idle_with_work", 100);
  int64_t before = seed_event("queue.idle_with_work", 800);
  seed_event("queue.drained", 900);
  int64_t inside = seed_event("queue.idle_with_work", 1500);
  seed_event("queue.idle_with_work", 2500);
  auto events = store_->jobless_events("queue.idle_with_work", 1000, 2000, 500);
  ASSERT_TRUE(events) << events.error().message;
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[0].seq, before);
  EXPECT_EQ((*events)[1].seq, inside);
  events = store_->jobless_events("queue.idle_with_work", 1000, 2000, 100);  // 800 is too old
  ASSERT_TRUE(events);
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].seq, inside);
}

}  // namespace
}  // namespace gpuq::store
