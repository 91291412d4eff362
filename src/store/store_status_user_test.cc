// SPDX-License-Identifier: Apache-2.0
// One user's view of GET /v1/status (`gpuq status --user`, `--mine`) in the store
// (store_status.cc): that user's jobs read through an index, without the rows of everyone
// else's, and serving positions among the whole queue.
#include <gtest/gtest.h>

#include <string>
#include <unordered_set>
#include <vector>

#include "store/store.h"
#include "store/store_fixture.h"

namespace gpuq::store {
namespace {

using UserStatusTest = testing::StoreFixture;
using Ids = std::vector<int64_t>;

using testing::ids_of;

class UserStatus : public UserStatusTest {
 protected:
  int64_t add(const std::string& user, JobState state, int priority = 50, int64_t finished_at_ms = 0,
              int64_t array_id = 0) {
    Job job;
    job.state = state;
    job.spec.user = user;
    job.spec.priority = priority;
    job.spec.cwd = "/tmp";
    job.spec.argv = {"true"};
    job.spec.env = {{"HOME", "/home/" + user}};
    job.submitted_at_ms = 1;
    job.array_id = array_id;
    auto id = store_->insert_job(job);
    EXPECT_TRUE(id) << id.error().message;
    if (id && is_terminal(state)) {
      auto st = store_->set_job_state(*id, state, "", finished_at_ms);
      EXPECT_TRUE(st) << st.error().message;
    }
    return id ? *id : 0;
  }
  Result<int64_t> add_array() {
    JobArray sweep;
    sweep.name = "sweep";
    sweep.sweep = R"({"array": "0-1"})";
    sweep.size = 2;
    return store_->insert_array(sweep);
  }
};

TEST_F(UserStatus, OnlyThatUsersActiveAndLatestFinishedJobs) {
  const int64_t ann_pending = add("ann", JobState::kPending);
  add("bob", JobState::kPending);
  const int64_t ann_held = add("ann", JobState::kHeld);
  add("bob", JobState::kRunning);
  const int64_t ann_old = add("ann", JobState::kSucceeded, 50, 100);
  add("bob", JobState::kFailed, 50, 300);  // later than every finished job of ann's
  const int64_t ann_new = add("ann", JobState::kFailed, 50, 200);
  const std::string ann = "ann";

  auto jobs = store_->status_jobs(1, nullptr, &ann);
  ASSERT_TRUE(jobs) << jobs.error().message;
  EXPECT_EQ(ids_of(jobs->active), (Ids{ann_pending, ann_held}));
  EXPECT_EQ(ids_of(jobs->finished), (Ids{ann_new}));  // ann's latest, not bob's later one
  EXPECT_EQ(jobs->finished_total, 3);                  // everyone's, as documented
  EXPECT_EQ(jobs->active[0].spec.user, "ann");

  jobs = store_->status_jobs(std::nullopt, nullptr, &ann);
  ASSERT_TRUE(jobs);
  EXPECT_EQ(ids_of(jobs->finished), (Ids{ann_old, ann_new}));

  const std::string nobody = "nobody";
  jobs = store_->status_jobs(10, nullptr, &nobody);
  ASSERT_TRUE(jobs);
  EXPECT_TRUE(jobs->active.empty());
  EXPECT_TRUE(jobs->finished.empty());
}

TEST_F(UserStatus, WithArraysLeftOutTheUsersSinglesAlone) {
  auto array = add_array();
  ASSERT_TRUE(array) << array.error().message;
  const int64_t single = add("ann", JobState::kPending);
  add("ann", JobState::kPending, 50, 0, *array);
  add("ann", JobState::kSucceeded, 50, 100, *array);
  const int64_t finished = add("ann", JobState::kSucceeded, 50, 50);
  add("bob", JobState::kPending);
  const std::string ann = "ann";
  const std::vector<int64_t> left_out = {*array};
  auto jobs = store_->status_jobs(5, &left_out, &ann);
  ASSERT_TRUE(jobs) << jobs.error().message;
  EXPECT_EQ(ids_of(jobs->active), (Ids{single}));
  EXPECT_EQ(ids_of(jobs->finished), (Ids{finished}));
}

// The reason for the filter in SQL: `gpuq status --user ann` beside 1,000,000 queued jobs of
// others loaded every one of them (30 s, past the CLI's wait) before keeping ann's.
TEST_F(UserStatus, ReadsNotTheRowsOfOthersJobs) {
  for (int i = 0; i < 5; ++i) add("ann", JobState::kPending);
  auto seed_others = [&](int count) {
    auto added = store_->transaction([&]() -> Status {
      for (int i = 0; i < count; ++i) add("bob", JobState::kPending);
      return ok();
    });
    ASSERT_TRUE(added) << added.error().message;
  };
  const std::string ann = "ann";
  auto cost = [&](const std::string* user, size_t expected) {
    int64_t steps = store_->vm_steps();
    auto jobs = store_->status_jobs(10, nullptr, user);
    EXPECT_TRUE(jobs) << jobs.error().message;
    if (jobs) {
      EXPECT_EQ(jobs->active.size(), expected);
    }
    return store_->vm_steps() - steps;
  };
  seed_others(100);
  const int64_t ann_small = cost(&ann, 5);
  seed_others(1900);
  const int64_t ann_large = cost(&ann, 5);
  const int64_t everyone = cost(nullptr, 2005);
  // A scan of an index entry per job is left, but no row of bob's is read and decoded.
  EXPECT_LT(ann_large, everyone / 4) << "all 2,005 jobs: " << everyone << " steps";
  EXPECT_LT(ann_large - ann_small, (everyone - ann_small) / 4);
}

TEST_F(UserStatus, AUsersPageListsAndCountsTheirJobsAlone) {
  const int64_t b1 = add("bob", JobState::kPending, 10);
  const int64_t a_late = add("ann", JobState::kPending, 60);
  const int64_t a_first = add("ann", JobState::kPending, 20);
  add("bob", JobState::kHeld);
  const int64_t a_held = add("ann", JobState::kHeld);
  const int64_t a_held_too = add("ann", JobState::kHeld);
  const int64_t a_running = add("ann", JobState::kRunning);
  add("bob", JobState::kRunning);
  const int64_t a_blocked = add("ann", JobState::kBlocked);
  const int64_t a_mid = add("ann", JobState::kPending, 40);
  add("bob", JobState::kSucceeded, 50, 900);
  const int64_t a_done = add("ann", JobState::kFailed, 50, 100);
  const std::string ann = "ann";

  auto page = store_->queue_page(0, 2, false, 5, nullptr, 1, &ann);
  ASSERT_TRUE(page) << page.error().message;
  EXPECT_EQ(ids_of(page->pending), (Ids{a_first, a_mid}));  // the first two of hers to be served
  EXPECT_EQ(page->pending_total, 3);
  EXPECT_EQ(ids_of(page->others), (Ids{a_held, a_running, a_blocked}));  // the oldest held
  EXPECT_EQ(page->held_total, 2);
  EXPECT_EQ(page->blocked_total, 1);
  EXPECT_EQ(ids_of(page->finished), (Ids{a_done}));
  EXPECT_EQ(page->finished_total, 1);

  page = store_->queue_page(2, 2, false, 0, nullptr, std::nullopt, &ann);  // the next page
  ASSERT_TRUE(page);
  EXPECT_EQ(ids_of(page->pending), (Ids{a_late}));
  EXPECT_EQ(ids_of(page->others), (Ids{a_held, a_held_too, a_running, a_blocked}));

  page = store_->queue_page(0, 5, /*fifo=*/true, 0, nullptr, std::nullopt, &ann);
  ASSERT_TRUE(page);
  EXPECT_EQ(ids_of(page->pending), (Ids{a_late, a_first, a_mid}));  // queue order alone

  const std::string nobody = "nobody";
  page = store_->queue_page(0, 5, false, 5, nullptr, 5, &nobody);
  ASSERT_TRUE(page);
  EXPECT_TRUE(page->pending.empty());
  EXPECT_TRUE(page->others.empty());
  EXPECT_TRUE(page->finished.empty());
  EXPECT_EQ(page->pending_total + page->held_total + page->blocked_total + page->finished_total, 0);

  page = store_->queue_page(0, 5, false, 5);  // everyone's, as before
  ASSERT_TRUE(page);
  EXPECT_EQ(page->pending.front().id, b1);
  EXPECT_EQ(page->pending_total, 4);
  EXPECT_EQ(page->finished_total, 2);
}

TEST_F(UserStatus, AUsersPageLeavesTheirArraysElementsOut) {
  auto array = add_array();
  ASSERT_TRUE(array) << array.error().message;
  add("ann", JobState::kPending, 10, 0, *array);
  add("ann", JobState::kHeld, 10, 0, *array);
  const int64_t single = add("ann", JobState::kPending, 50);
  const std::string ann = "ann";
  const std::vector<int64_t> left_out = {*array};
  auto page = store_->queue_page(0, 5, false, 5, &left_out, 5, &ann);
  ASSERT_TRUE(page) << page.error().message;
  EXPECT_EQ(ids_of(page->pending), (Ids{single}));
  EXPECT_EQ(page->pending_total, 1);
  EXPECT_EQ(page->held_total, 0);
  EXPECT_TRUE(page->others.empty());
}

// A user's latest finished jobs and their count come from jobs_finished_user: the history of
// everyone else is not walked (it was, row by row, until one user's jobs were found).
TEST_F(UserStatus, ReadsNotTheFinishedHistoryOfOthers) {
  for (int i = 0; i < 5; ++i) add("ann", JobState::kPending);
  const int64_t done = add("ann", JobState::kSucceeded, 50, 10);
  const std::string ann = "ann";
  auto cost = [&] {
    int64_t steps = store_->vm_steps();
    auto jobs = store_->status_jobs(10, nullptr, &ann);
    EXPECT_TRUE(jobs) << jobs.error().message;
    if (jobs) {
      EXPECT_EQ(ids_of(jobs->finished), (Ids{done}));
    }
    auto page = store_->queue_page(0, 5, false, 10, nullptr, 5, &ann);
    EXPECT_TRUE(page) << page.error().message;
    if (page) {
      EXPECT_EQ(ids_of(page->finished), (Ids{done}));
      EXPECT_EQ(page->finished_total, 1);
    }
    return store_->vm_steps() - steps;
  };
  seed_history(50, 1000);  // finished later than ann's, by no one she is
  const int64_t small = cost();
  seed_history(1950, 2000);
  const int64_t large = cost();
  EXPECT_LT(large, small * 3 / 2) << "steps with 50 finished jobs of others: " << small;
}

TEST_F(UserStatus, ServingPositionsCountTheWholeQueue) {
  const int64_t a = add("bob", JobState::kPending, 50);
  const int64_t b = add("ann", JobState::kPending, 60);
  const int64_t c = add("bob", JobState::kPending, 40);
  const int64_t d = add("ann", JobState::kPending, 50);
  const int64_t held = add("ann", JobState::kHeld, 10);
  auto positions = store_->serving_positions({b, d, held}, /*fifo=*/false);
  ASSERT_TRUE(positions) << positions.error().message;
  // Priority order (lower first), then queue order: c, a, d, b. A held job has no position.
  EXPECT_EQ(positions->size(), 2u);
  EXPECT_EQ(positions->at(d), 3);
  EXPECT_EQ(positions->at(b), 4);

  positions = store_->serving_positions({b, d, c}, /*fifo=*/true);  // queue order alone
  ASSERT_TRUE(positions);
  EXPECT_EQ(positions->at(b), 2);
  EXPECT_EQ(positions->at(c), 3);
  EXPECT_EQ(positions->at(d), 4);
  (void)a;

  positions = store_->serving_positions({}, false);
  ASSERT_TRUE(positions);
  EXPECT_TRUE(positions->empty());
}

}  // namespace
}  // namespace gpuq::store
