// SPDX-License-Identifier: Apache-2.0
// Job arrays in the store (store_arrays.cc, schema 11) on a real SQLite file: arrays and their
// elements round-trip, names stay unique, the arrays with unfinished elements are found, and an
// array goes with its last pruned element.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "store/schema.h"
#include "store/store.h"
#include "store/store_fixture.h"

namespace gpuq::store {
namespace {

using Ids = std::vector<int64_t>;

class ArrayStoreTest : public testing::StoreFixture {
 protected:
  static JobArray sample_array(const std::string& name, int size) {
    JobArray array;
    array.name = name;
    array.sweep = R"({"array":"0-9%2"})";
    array.max_running = 2;
    array.size = size;
    array.submitted_at_ms = 1000;
    return array;
  }
  // Records `array`; returns its id (0 when refused, with a failed expectation).
  int64_t add_array(const JobArray& array) {
    int64_t id = 0;
    auto added = store_->transaction([&]() -> Status {
      auto inserted = store_->insert_array(array);
      if (!inserted) return tl::unexpected(inserted.error());
      id = *inserted;
      return ok();
    });
    EXPECT_TRUE(added) << added.error().message;
    return id;
  }
  // A job named `name` in `state` (finished ones at `finished_at_ms`), an element of
  // `array_id` (0: alone); returns its id.
  int64_t add_job(const std::string& name, int64_t array_id, JobState state = JobState::kPending,
                  int64_t finished_at_ms = 0) {
    Job job;
    job.spec.name = name;
    job.spec.cwd = "/tmp";
    job.spec.argv = {"true"};
    job.state = state;
    job.submitted_at_ms = 1000;
    job.finished_at_ms = finished_at_ms;
    job.array_id = array_id;
    int64_t id = 0;
    auto added = store_->transaction([&]() -> Status {
      auto inserted = store_->insert_job(job);
      if (!inserted) return tl::unexpected(inserted.error());
      id = *inserted;
      return ok();
    });
    EXPECT_TRUE(added) << added.error().message;
    return id;
  }
  Ids active_array_ids() {
    auto arrays = store_->active_arrays();
    EXPECT_TRUE(arrays) << arrays.error().message;
    Ids ids;
    if (arrays) {
      for (const JobArray& array : *arrays) ids.push_back(array.id);
    }
    return ids;
  }
  Status prune(const Ids& ids) {
    return store_->transaction([&] { return store_->prune_jobs(ids); });
  }
  int64_t count_rows(const std::string& sql) {
    auto db = Database::open(path_, true);
    EXPECT_TRUE(db);
    auto stmt = (*db)->prepare(sql);
    EXPECT_TRUE(stmt) << stmt.error().message;
    EXPECT_TRUE(stmt->step());
    return stmt->int64(0);
  }
};

Ids ids_of(const std::vector<Job>& jobs) {
  Ids out;
  for (const Job& job : jobs) out.push_back(job.id);
  return out;
}

TEST_F(ArrayStoreTest, AnArrayAndItsElementsRoundTrip) {
  int64_t grid = add_array(sample_array("grid", 2));
  int64_t sweep = add_array(sample_array("sweep", 3));
  EXPECT_EQ(sweep, grid + 1);
  // Elements of the two arrays interleaved, and a job alone.
  int64_t s0 = add_job("sweep[0]", sweep);
  int64_t g0 = add_job("grid[lr=1e-4]", grid);
  int64_t s1 = add_job("sweep[1]", sweep, JobState::kRunning);
  int64_t alone = add_job("alone", 0);
  int64_t g1 = add_job("grid[lr=3e-4]", grid);
  int64_t s2 = add_job("sweep[2]", sweep, JobState::kSucceeded, 2000);

  JobArray expected = sample_array("sweep", 3);
  expected.id = sweep;
  auto found = store_->find_array(sweep);
  ASSERT_TRUE(found) << found.error().message;
  ASSERT_TRUE(*found);
  EXPECT_EQ(**found, expected);
  auto by_name = store_->find_array_by_name("sweep");
  ASSERT_TRUE(by_name) << by_name.error().message;
  ASSERT_TRUE(*by_name);
  EXPECT_EQ(**by_name, expected);
  EXPECT_EQ(*store_->find_array(sweep + 1), std::nullopt);
  EXPECT_EQ(*store_->find_array_by_name("sweep[0]"), std::nullopt);

  EXPECT_EQ(*store_->array_elements(sweep), (Ids{s0, s1, s2}));
  EXPECT_EQ(*store_->array_elements(grid), (Ids{g0, g1}));
  EXPECT_EQ(*store_->array_elements(sweep + 1), Ids{});

  auto element = store_->find_job(s1);
  ASSERT_TRUE(element && *element);
  EXPECT_EQ((*element)->array_id, sweep);
  auto single = store_->find_job_by_name("alone");
  ASSERT_TRUE(single && *single);
  EXPECT_EQ((*single)->id, alone);
  EXPECT_EQ((*single)->array_id, 0);

  auto all = store_->list_jobs(false, false);
  ASSERT_TRUE(all) << all.error().message;
  Ids ids, array_ids;
  for (const Job& job : *all) {
    ids.push_back(job.id);
    array_ids.push_back(job.array_id);
  }
  EXPECT_EQ(ids, (Ids{s0, g0, s1, alone, g1, s2}));
  EXPECT_EQ(array_ids, (Ids{sweep, grid, sweep, 0, grid, sweep}));

  auto status = store_->status_jobs(std::nullopt);
  ASSERT_TRUE(status) << status.error().message;
  array_ids.clear();
  for (const Job& job : status->active) array_ids.push_back(job.array_id);
  EXPECT_EQ(array_ids, (Ids{sweep, grid, sweep, 0, grid}));
  ASSERT_EQ(status->finished.size(), 1u);
  EXPECT_EQ(status->finished[0].id, s2);
  EXPECT_EQ(status->finished[0].array_id, sweep);

  auto page = store_->queue_page(0, 10, true);
  ASSERT_TRUE(page) << page.error().message;
  array_ids.clear();
  for (const Job& job : page->pending) array_ids.push_back(job.array_id);
  EXPECT_EQ(array_ids, (Ids{sweep, grid, 0, grid}));
  ASSERT_EQ(page->others.size(), 1u);
  EXPECT_EQ(page->others[0].array_id, sweep);

  // Collapsed (gpuq status's table): the elements of the listed arrays are left out of the
  // page, the others, the finished jobs and the count of pending ones.
  Ids unfinished = {grid, sweep};
  page = store_->queue_page(0, 10, false, 10, &unfinished);
  ASSERT_TRUE(page) << page.error().message;
  EXPECT_EQ(ids_of(page->pending), Ids{alone});
  EXPECT_TRUE(page->others.empty());
  EXPECT_TRUE(page->finished.empty());
  EXPECT_EQ(page->pending_total, 1);
  page = store_->queue_page(0, 10, true, 10, &unfinished);  // FIFO alike
  ASSERT_TRUE(page) << page.error().message;
  EXPECT_EQ(ids_of(page->pending), Ids{alone});
  EXPECT_EQ(page->pending_total, 1);
  page = store_->queue_page(0, 10, false, 10);  // not collapsed: every pending job counts
  ASSERT_TRUE(page) << page.error().message;
  EXPECT_EQ(page->pending_total, 4);
  EXPECT_EQ(page->finished.size(), 1u);
  EXPECT_EQ(page->held_total, 0);
  // A held element is counted only while its array is not collapsed; a held job alone always.
  int64_t held_alone = add_job("held-alone", 0, JobState::kHeld);
  add_job("grid[lr=9e-4]", grid, JobState::kHeld);
  page = store_->queue_page(0, 10, false, 10, &unfinished, 10);
  ASSERT_TRUE(page) << page.error().message;
  EXPECT_EQ(ids_of(page->others), Ids{held_alone});
  EXPECT_EQ(page->held_total, 1);
  EXPECT_EQ(page->blocked_total, 0);
  page = store_->queue_page(0, 10, false, 10, nullptr, 10);
  ASSERT_TRUE(page) << page.error().message;
  EXPECT_EQ(page->held_total, 2);
}

// What a cancel, hold or release of a whole array reads: each element's id and state, by id,
// of the states asked for (all of them when none is named), and nothing of other arrays.
TEST_F(ArrayStoreTest, TheElementsIdsAndStatesOnly) {
  int64_t array = add_array(sample_array("sweep", 4));
  int64_t other = add_array(sample_array("other", 1));
  int64_t a = add_job("sweep[0]", array, JobState::kPending);
  int64_t b = add_job("sweep[1]", array, JobState::kSucceeded, 2000);
  add_job("other[0]", other, JobState::kPending);
  int64_t c = add_job("sweep[2]", array, JobState::kHeld);
  int64_t d = add_job("sweep[3]", array, JobState::kRunning);
  using Pairs = std::vector<std::pair<int64_t, JobState>>;
  auto waiting = store_->array_job_states(array, {JobState::kHeld, JobState::kPending});
  ASSERT_TRUE(waiting) << waiting.error().message;
  EXPECT_EQ(*waiting, (Pairs{{a, JobState::kPending}, {c, JobState::kHeld}}));
  auto all = store_->array_job_states(array, {});
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_EQ(*all, (Pairs{{a, JobState::kPending}, {b, JobState::kSucceeded}, {c, JobState::kHeld},
                         {d, JobState::kRunning}}));
  auto none = store_->array_job_states(array, {JobState::kFailed});
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST_F(ArrayStoreTest, ASecondArrayWithTheSameNameIsRefused) {
  int64_t first = add_array(sample_array("sweep", 3));
  JobArray again = sample_array("sweep", 5);
  auto refused = store_->transaction([&]() -> Status {
    auto inserted = store_->insert_array(again);
    if (!inserted) return tl::unexpected(inserted.error());
    return ok();
  });
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kConflict);
  EXPECT_EQ(refused.error().message, "an array named 'sweep' exists already (array " +
                                         std::to_string(first) +
                                         "): give the new one another name");
  auto kept = store_->find_array_by_name("sweep");
  ASSERT_TRUE(kept && *kept);
  EXPECT_EQ((*kept)->id, first);
  EXPECT_EQ((*kept)->size, 3);
  EXPECT_EQ(count_rows("SELECT COUNT(*) FROM arrays"), 1);
}

// An element's reads without the environment leave out its own variables too, as SQLite's
// json_remove leaves out a job's own environment: only the fields scheduling needs are read.
TEST_F(ArrayStoreTest, AnElementReadWithoutTheEnvironmentHasNone) {
  JobArray array = sample_array("sweep", 1);
  array.base = R"({"argv":["true"],"cwd":"/tmp","env":{"HOME":"/root"}})";
  int64_t array_id = add_array(array);
  Job element;
  element.spec.name = "sweep[0]";
  element.spec.cwd = "/tmp";
  element.spec.argv = {"true", "0"};
  element.spec.env = {{"GPUQ_ARRAY_INDEX", "0"}};
  element.spec.gpus = 2;
  element.spec.lanes = {"net"};
  element.state = JobState::kPending;
  element.submitted_at_ms = 1000;
  element.array_id = array_id;
  ASSERT_TRUE(store_->transaction([&]() -> Status {
    auto inserted = store_->insert_job(element);
    if (!inserted) return tl::unexpected(inserted.error());
    return ok();
  }));
  auto whole = store_->array_jobs(array_id, {}, false, true);
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->size(), 1u);
  EXPECT_EQ(whole->front().spec.env,
            (std::map<std::string, std::string>{{"GPUQ_ARRAY_INDEX", "0"}, {"HOME", "/root"}}));
  auto lean = store_->array_jobs(array_id, {}, false, false);
  ASSERT_TRUE(lean);
  ASSERT_EQ(lean->size(), 1u);
  EXPECT_TRUE(lean->front().spec.env.empty());
  EXPECT_EQ(lean->front().spec.argv, element.spec.argv);
  std::vector<Job> recovered;
  ASSERT_TRUE(store_->each_active_job([&](const Job& job) -> Status {
    recovered.push_back(job);
    return ok();
  }));
  ASSERT_EQ(recovered.size(), 1u);
  EXPECT_TRUE(recovered.front().spec.env.empty());
  EXPECT_EQ(recovered.front().spec.gpus, 2);
  EXPECT_EQ(recovered.front().spec.lanes, std::vector<std::string>{"net"});
  EXPECT_EQ(recovered.front().array_id, array_id);
}

// The schema holds what the store's callers must not get wrong.
TEST_F(ArrayStoreTest, TheSchemaRefusesImpossibleArraysAndElements) {
  auto insert = [&](const JobArray& array) {
    return store_->transaction([&]() -> Status {
      auto inserted = store_->insert_array(array);
      if (!inserted) return tl::unexpected(inserted.error());
      return ok();
    });
  };
  EXPECT_FALSE(insert(sample_array("empty", 0)));  // size >= 1
  JobArray negative_cap = sample_array("capped", 2);
  negative_cap.max_running = -1;
  EXPECT_FALSE(insert(negative_cap));  // max_running >= 0
  // An element of an array that does not exist (the foreign key).
  Job orphan;
  orphan.spec.cwd = "/tmp";
  orphan.spec.argv = {"true"};
  orphan.array_id = 42;
  auto refused = store_->transaction([&]() -> Status {
    auto inserted = store_->insert_job(orphan);
    if (!inserted) return tl::unexpected(inserted.error());
    return ok();
  });
  EXPECT_FALSE(refused);
  EXPECT_EQ(count_rows("SELECT COUNT(*) FROM arrays"), 0);
  EXPECT_EQ(count_rows("SELECT COUNT(*) FROM jobs"), 0);
}

TEST_F(ArrayStoreTest, ActiveArraysAreThoseWithAnUnfinishedElement) {
  int64_t done = add_array(sample_array("done", 1));
  add_job("done[0]", done, JobState::kFailed, 1500);
  int64_t sweep = add_array(sample_array("sweep", 2));
  int64_t first = add_job("sweep[0]", sweep);
  int64_t second = add_job("sweep[1]", sweep, JobState::kSucceeded, 1500);
  add_job("alone", 0);
  EXPECT_EQ(active_array_ids(), (Ids{sweep}));
  auto listed = store_->active_arrays();
  ASSERT_TRUE(listed && listed->size() == 1u);
  JobArray expected = sample_array("sweep", 2);
  expected.id = sweep;
  EXPECT_EQ(listed->front(), expected);
  for (JobState state : {JobState::kHeld, JobState::kRunning, JobState::kBlocked}) {
    ASSERT_TRUE(
        store_->transaction([&] { return store_->set_job_state(first, state, "", std::nullopt); }));
    EXPECT_EQ(active_array_ids(), (Ids{sweep})) << to_string(state);
  }
  int64_t later = add_array(sample_array("later", 1));
  add_job("later[0]", later);
  EXPECT_EQ(active_array_ids(), (Ids{sweep, later}));
  for (JobState state :
       {JobState::kSucceeded, JobState::kFailed, JobState::kCancelled, JobState::kSkipped}) {
    ASSERT_TRUE(store_->transaction([&] { return store_->set_job_state(first, state, "", 1600); }));
    EXPECT_EQ(active_array_ids(), (Ids{later})) << to_string(state);
  }
  // A finished element requeued (gpuq retry) makes its array active again.
  ASSERT_TRUE(store_->transaction(
      [&] { return store_->set_job_state(second, JobState::kPending, "", std::nullopt); }));
  EXPECT_EQ(active_array_ids(), (Ids{sweep, later}));
}

TEST_F(ArrayStoreTest, AnArrayGoesWithItsLastPrunedElement) {
  int64_t sweep = add_array(sample_array("sweep", 2));
  int64_t first = add_job("sweep[0]", sweep, JobState::kSucceeded, 100);
  int64_t second = add_job("sweep[1]", sweep, JobState::kFailed, 200);
  int64_t other = add_array(sample_array("other", 1));
  int64_t other_element = add_job("other[0]", other, JobState::kSucceeded, 100);
  int64_t alone = add_job("alone", 0, JobState::kSucceeded, 100);

  ASSERT_TRUE(prune({first, alone}));
  auto kept = store_->find_array(sweep);
  ASSERT_TRUE(kept && *kept);
  EXPECT_EQ((*kept)->name, "sweep");
  EXPECT_EQ(*store_->array_elements(sweep), (Ids{second}));
  ASSERT_TRUE(store_->find_array(other) && *store_->find_array(other));

  ASSERT_TRUE(prune({second}));
  EXPECT_EQ(*store_->find_array(sweep), std::nullopt);
  EXPECT_EQ(*store_->find_array_by_name("sweep"), std::nullopt);
  EXPECT_EQ(*store_->array_elements(sweep), Ids{});
  // The other array and its element are untouched.
  EXPECT_EQ(*store_->array_elements(other), (Ids{other_element}));
  EXPECT_EQ(count_rows("SELECT COUNT(*) FROM arrays"), 1);
  EXPECT_EQ(count_rows("SELECT COUNT(*) FROM pragma_foreign_key_check"), 0);
  // Its name is free again; its id is never given out again.
  EXPECT_EQ(add_array(sample_array("sweep", 1)), other + 1);
}

// An array's first and last job are found whatever state they are in (the range is read per
// state, from both ends of each state's run in jobs_by_array): every JobState here.
TEST_F(ArrayStoreTest, SummaryRangeFindsTheEndsInEveryState) {
  int64_t sweep = add_array(sample_array("sweep", 3));
  int64_t first = add_job("sweep[0]", sweep);
  add_job("sweep[1]", sweep);  // pending: the array stays unfinished
  int64_t last = add_job("sweep[2]", sweep);
  for (JobState state : {JobState::kPending, JobState::kHeld, JobState::kRunning, JobState::kBlocked,
                         JobState::kSucceeded, JobState::kFailed, JobState::kCancelled,
                         JobState::kSkipped}) {
    for (int64_t id : {first, last}) ASSERT_TRUE(store_->set_job_state(id, state, "", std::nullopt));
    auto summaries = store_->active_array_summaries();
    ASSERT_TRUE(summaries) << summaries.error().message;
    ASSERT_EQ(summaries->size(), 1u);
    EXPECT_EQ((*summaries)[0].first_job, first) << to_string(state);
    EXPECT_EQ((*summaries)[0].last_job, last) << to_string(state);
  }
}

// With a history forty times longer, the array reads cost about the same: they go through
// jobs_by_array and jobs_active, not over every job.
TEST_F(ArrayStoreTest, ArrayReadsDoNotReadTheWholeHistory) {
  int64_t sweep = add_array(sample_array("sweep", 2));
  add_job("sweep[0]", sweep);
  add_job("sweep[1]", sweep, JobState::kSucceeded, 100);
  auto cost = [&] {
    auto steps = store_->vm_steps();
    EXPECT_EQ(store_->array_elements(sweep)->size(), 2u);
    EXPECT_EQ(store_->active_arrays()->size(), 1u);
    return store_->vm_steps() - steps;
  };
  seed_history(50, 1000);
  int64_t small = cost();
  seed_history(1950, 2000);
  int64_t large = cost();
  EXPECT_LT(large, small * 3 / 2) << "steps with 50 finished jobs: " << small;
}

TEST_F(ArrayStoreTest, AVersionTenStoreKeepsItsJobsAloneWhenMigrated) {
  store_.reset();
  std::filesystem::remove(path_);
  {
    auto db = Database::open(path_, false);
    ASSERT_TRUE(db);
    ASSERT_TRUE(migrate(**db, 10));
    ASSERT_TRUE((*db)->exec(
        "INSERT INTO jobs(id, name, state, priority, queue_order, gpus, spec, submitted_at, "
        "finished_at, user) VALUES "
        "(1, 'a', 'succeeded', 50, 1, 0, '{\"cwd\":\"/\",\"argv\":[\"true\"]}', 5, 9, 'ann'), "
        "(2, NULL, 'pending', 10, 2, 1, '{\"cwd\":\"/\",\"argv\":[\"true\"]}', 6, NULL, '');"));
  }
  auto reopened = Store::open(path_, false);
  ASSERT_TRUE(reopened) << reopened.error().message;
  Store& store = **reopened;
  auto jobs = store.list_jobs(false, false);
  ASSERT_TRUE(jobs) << jobs.error().message;
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].id, 1);
  EXPECT_EQ((*jobs)[0].spec.name, "a");
  EXPECT_EQ((*jobs)[0].spec.user, "ann");
  EXPECT_EQ((*jobs)[0].finished_at_ms, 9);
  EXPECT_EQ((*jobs)[0].array_id, 0);
  EXPECT_EQ((*jobs)[1].id, 2);
  EXPECT_EQ((*jobs)[1].queue_order, 2);
  EXPECT_EQ((*jobs)[1].array_id, 0);
  auto active = store.active_arrays();
  ASSERT_TRUE(active) << active.error().message;
  EXPECT_EQ(active->size(), 0u);
  {
    auto db = Database::open(path_, true);
    ASSERT_TRUE(db);
    EXPECT_EQ(*schema_version(**db), current_schema_version());
  }
  EXPECT_EQ(count_rows("SELECT COUNT(*) FROM jobs WHERE array_id IS NOT NULL"), 0);
  EXPECT_EQ(count_rows("SELECT COUNT(*) FROM sqlite_master WHERE name = 'jobs_by_array'"), 1);
  // The migrated store takes arrays: ids from 1, elements after the old jobs.
  JobArray array = sample_array("sweep", 1);
  int64_t array_id = 0, element = 0;
  ASSERT_TRUE(store.transaction([&]() -> Status {
    auto inserted = store.insert_array(array);
    if (!inserted) return tl::unexpected(inserted.error());
    array_id = *inserted;
    Job job;
    job.spec.cwd = "/";
    job.spec.argv = {"true"};
    job.array_id = array_id;
    auto id = store.insert_job(job);
    if (!id) return tl::unexpected(id.error());
    element = *id;
    return ok();
  }));
  EXPECT_EQ(array_id, 1);
  EXPECT_EQ(element, 3);
  EXPECT_EQ(*store.array_elements(array_id), (Ids{3}));
  EXPECT_EQ(count_rows("SELECT COUNT(*) FROM pragma_foreign_key_check"), 0);
}

TEST_F(ArrayStoreTest, CountsElementRowsUsageAndSummariesComeFromOneQueryEach) {
  JobArray with_base = sample_array("sweep", 4);
  with_base.base = R"({"argv":["true"]})";
  int64_t sweep = add_array(with_base);
  int64_t done = add_array(sample_array("done", 1));
  int64_t s0 = add_job("sweep[0]", sweep, JobState::kSucceeded, 2000);
  int64_t s1 = add_job("sweep[1]", sweep, JobState::kFailed, 3000);
  int64_t s2 = add_job("sweep[2]", sweep, JobState::kRunning);
  int64_t s3 = add_job("sweep[3]", sweep);
  int64_t d0 = add_job("done[0]", done, JobState::kSucceeded, 2500);
  EXPECT_EQ((*store_->find_array(sweep))->base, with_base.base);
  EXPECT_EQ((*store_->find_array(done))->base, "");
  // Runs: s1 twice (the second exits 7) on two GPUs, s2 still running on one, s0 once.
  auto add_run = [&](int64_t job, int number, std::vector<std::string> gpus, int64_t start,
                     int64_t end, std::optional<int> code, std::optional<int> signal) {
    gpuq::Run run;
    run.job_id = job;
    run.number = number;
    run.gpus = std::move(gpus);
    run.started_at_ms = start;
    run.run_dir = fmt::format("/tmp/r{}-{}", job, number);
    ASSERT_TRUE(store_->transaction([&]() -> Status {
      auto id = store_->insert_run(run);
      if (!id) return tl::unexpected(id.error());
      if (end == 0) return ok();
      return store_->finish_run(*id, end, code, signal, code == 0 ? RunOutcome::kSucceeded : RunOutcome::kFailed);
    }));
  };
  add_run(s0, 1, {"gpu0"}, 1000, 2000, 0, std::nullopt);
  add_run(s1, 1, {"gpu0", "gpu1"}, 1000, 1500, std::nullopt, 9);
  add_run(s1, 2, {"gpu0", "gpu1"}, 2000, 3000, 7, std::nullopt);
  add_run(s2, 1, {"gpu2"}, 2500, 0, std::nullopt, std::nullopt);

  auto counts = store_->array_counts(sweep);
  ASSERT_TRUE(counts) << counts.error().message;
  EXPECT_EQ(*counts, (Store::StateCounts{{JobState::kFailed, 1}, {JobState::kPending, 1},
                                         {JobState::kRunning, 1}, {JobState::kSucceeded, 1}}));
  EXPECT_EQ(*store_->array_unfinished(sweep), true);
  EXPECT_EQ(*store_->array_unfinished(done), false);

  auto rows = store_->array_element_rows(sweep);
  ASSERT_TRUE(rows) << rows.error().message;
  ASSERT_EQ(rows->size(), 4u);
  EXPECT_EQ((*rows)[1].id, s1);
  EXPECT_EQ((*rows)[1].name, "sweep[1]");
  EXPECT_EQ((*rows)[1].state, JobState::kFailed);
  EXPECT_EQ((*rows)[1].runs, 2);
  EXPECT_EQ((*rows)[1].exit_code, 7) << "the latest run's, not the first's signal";
  EXPECT_EQ((*rows)[1].signal, std::nullopt);
  EXPECT_EQ((*rows)[2].runs, 1);
  EXPECT_EQ((*rows)[2].exit_code, std::nullopt);
  EXPECT_EQ((*rows)[3].id, s3);
  EXPECT_EQ((*rows)[3].runs, 0);

  auto usage = store_->array_usage(sweep, 4000);
  ASSERT_TRUE(usage) << usage.error().message;
  EXPECT_EQ(usage->first_start_ms, 1000);
  EXPECT_EQ(usage->last_end_ms, 3000);
  EXPECT_EQ(usage->running, 1);
  // 1000 ms on 1 GPU + 500 and 1000 ms on 2 GPUs + 1500 ms so far on 1 GPU.
  EXPECT_EQ(usage->gpu_ms, 1000 + 2 * 500 + 2 * 1000 + 1500);

  auto summaries = store_->active_array_summaries();
  ASSERT_TRUE(summaries) << summaries.error().message;
  ASSERT_EQ(summaries->size(), 1u) << "'done' has no unfinished element";
  EXPECT_EQ((*summaries)[0].array.id, sweep);
  EXPECT_EQ((*summaries)[0].counts, *counts);
  EXPECT_EQ((*summaries)[0].first_job, s0);
  EXPECT_EQ((*summaries)[0].last_job, s3);

  // Status without the unfinished array's elements: its finished ones go too; a finished
  // array's elements stay, as any finished job.
  int64_t alone = add_job("alone", 0);
  Ids left_out = {sweep};
  auto status = store_->status_jobs(10, &left_out);
  ASSERT_TRUE(status) << status.error().message;
  Ids active, finished;
  for (const Job& job : status->active) active.push_back(job.id);
  for (const Job& job : status->finished) finished.push_back(job.id);
  EXPECT_EQ(active, Ids{alone});
  EXPECT_EQ(finished, Ids{d0});
  auto everything = store_->status_jobs(10);
  ASSERT_TRUE(everything);
  EXPECT_EQ(everything->active.size(), 3u);
  EXPECT_EQ(everything->finished.size(), 3u);
}

}  // namespace
}  // namespace gpuq::store
