// SPDX-License-Identifier: Apache-2.0
// The jobs of GET /v1/status (store_status.cc) on a real SQLite file: which jobs, with which
// runs, and a cost that does not follow the number of finished jobs.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <stdexcept>

#include "store/schema.h"
#include "store/store.h"
#include "store/store_fixture.h"

namespace gpuq::store {
namespace {

using StatusJobsTest = testing::StoreFixture;
using Ids = std::vector<int64_t>;

using testing::ids_of;

TEST_F(StatusJobsTest, EveryActiveJobAndTheLatestFinishedWithTheirRuns) {
  int64_t pending = seed_job(JobState::kPending);
  int64_t newest = seed_job(JobState::kFailed, 500, 2);
  int64_t old = seed_job(JobState::kSucceeded, 100, 1);
  int64_t tie_low = seed_job(JobState::kCancelled, 300, 1);
  int64_t running = seed_job(JobState::kRunning);
  int64_t tie_high = seed_job(JobState::kSkipped, 300);  // same finish: the higher id is later
  int64_t blocked = seed_job(JobState::kBlocked);
  int64_t held = seed_job(JobState::kHeld);

  auto jobs = store_->status_jobs(2);
  ASSERT_TRUE(jobs) << jobs.error().message;
  EXPECT_EQ(ids_of(jobs->active), (Ids{pending, running, blocked, held}));
  EXPECT_EQ(ids_of(jobs->finished), (Ids{newest, tie_high}));  // by id
  EXPECT_EQ(jobs->finished_total, 4);
  ASSERT_EQ(jobs->finished[0].runs.size(), 2u);
  EXPECT_EQ(jobs->finished[0].runs[1].number, 2);
  EXPECT_EQ(jobs->finished[0].runs[1].job_id, newest);

  jobs = store_->status_jobs(3);
  ASSERT_TRUE(jobs);
  EXPECT_EQ(ids_of(jobs->finished), (Ids{newest, tie_low, tie_high}));
  ASSERT_EQ(jobs->finished[1].runs.size(), 1u);
  EXPECT_EQ(jobs->finished[1].runs[0].job_id, tie_low);

  jobs = store_->status_jobs(std::nullopt);
  ASSERT_TRUE(jobs);
  EXPECT_EQ(ids_of(jobs->finished), (Ids{newest, old, tie_low, tie_high}));

  jobs = store_->status_jobs(0);
  ASSERT_TRUE(jobs);
  EXPECT_TRUE(jobs->finished.empty());
  EXPECT_EQ(jobs->active.size(), 4u);
  EXPECT_EQ(jobs->finished_total, 4);
}

// GET /v1/status reads in one snapshot of the read-only connection: a change committed by the
// daemon's connection while it reads is not seen halfway (a job listed as pending by one query
// and as failed by the next); the next snapshot sees it, even after one that threw.
TEST_F(StatusJobsTest, AReadSnapshotSeesOneMomentAndTheNextSeesTheChange) {
  int64_t pending = seed_job(JobState::kPending);
  auto reader = Store::open(path_, true);
  ASSERT_TRUE(reader) << reader.error().message;
  auto state_of = [&](int64_t id) {
    auto job = (*reader)->find_job(id, false);
    return job && *job ? (*job)->state : JobState::kSkipped;
  };
  auto read = (*reader)->read_snapshot([&]() -> Status {
    EXPECT_EQ(state_of(pending), JobState::kPending);
    auto failed = store_->transaction([&] { return store_->set_job_state(pending, JobState::kFailed, "", 7); });
    EXPECT_TRUE(failed) << failed.error().message;
    EXPECT_EQ(state_of(pending), JobState::kPending) << "the same snapshot";
    auto jobs = (*reader)->status_jobs(10);
    EXPECT_TRUE(jobs && ids_of(jobs->active) == Ids{pending} && jobs->finished.empty());
    return ok();
  });
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(state_of(pending), JobState::kFailed);

  int64_t second = seed_job(JobState::kPending);
  EXPECT_THROW((void)(*reader)->read_snapshot([&]() -> Status {
                 EXPECT_EQ(state_of(second), JobState::kPending);
                 throw std::runtime_error("a handler that throws");
               }),
               std::runtime_error);
  ASSERT_TRUE(store_->transaction([&] { return store_->set_job_state(second, JobState::kFailed, "", 8); }));
  read = (*reader)->read_snapshot([&]() -> Status {
    EXPECT_EQ(state_of(second), JobState::kFailed) << "a fresh snapshot after the one that threw";
    return ok();
  });
  EXPECT_TRUE(read) << read.error().message;
}

// What an ETA reads, without decoding whole specs: the same fields as a full load.
TEST_F(StatusJobsTest, EtaJobsReadWhatAnEtaNeedsAsAFullLoadDoes) {
  Job job;
  job.state = JobState::kPending;
  job.spec.name = "train";
  job.spec.user = "ann";  // fair share orders a shared box's ETAs by user
  job.spec.cwd = "/tmp";
  job.spec.argv = {"python", "train.py"};
  job.spec.env = {{"HOME", "/root"}, {"PATH", "/usr/bin"}};
  job.spec.gpus = 2;
  job.spec.priority = 20;
  job.spec.estimate_ms = 600'000;
  job.spec.timeout_ms = 900'000;
  job.spec.not_before_ms = 5'000;
  job.spec.lanes = {"net", "disk"};
  job.spec.gpu_mem_mib = 4096;
  job.spec.share = true;
  job.spec.deps = {Dependency{Dependency::Kind::kAfterOk, "prep", 0},
                   Dependency{Dependency::Kind::kRequires, "test -f x", 0}};
  job.submitted_at_ms = 1;
  job.queue_order = 7;
  job.retry_at_ms = 9'000;
  int64_t prep = seed_job(JobState::kRunning);
  ASSERT_TRUE(store_->transaction([&]() -> Status {
    gpuq::Run run;
    run.job_id = prep;
    run.number = 1;
    run.started_at_ms = 3;
    run.run_dir = "/runs/prep/1";
    auto id = store_->insert_run(run);
    if (!id) return tl::unexpected(id.error());
    return ok();
  }));
  job.spec.deps[0].job_id = prep;
  int64_t train = 0;
  ASSERT_TRUE(store_->transaction([&]() -> Status {
    auto id = store_->insert_job(job);
    if (!id) return tl::unexpected(id.error());
    train = *id;
    return ok();
  }));
  seed_job(JobState::kSucceeded, 100, 1);  // finished: not an ETA's business
  int64_t bare = seed_job(JobState::kPending);

  auto light = store_->eta_jobs();
  ASSERT_TRUE(light) << light.error().message;
  auto full = store_->status_jobs(0);
  ASSERT_TRUE(full);
  ASSERT_EQ(ids_of(*light), (Ids{prep, train, bare}));
  ASSERT_EQ(ids_of(*light), ids_of(full->active));
  for (size_t k = 0; k < light->size(); ++k) {
    const Job& a = (*light)[k];
    const Job& b = full->active[k];
    EXPECT_EQ(a.state, b.state);
    EXPECT_EQ(a.spec.name, b.spec.name);
    EXPECT_EQ(a.spec.gpus, b.spec.gpus);
    EXPECT_EQ(a.spec.priority, b.spec.priority);
    EXPECT_EQ(a.queue_order, b.queue_order);
    EXPECT_EQ(a.retry_at_ms, b.retry_at_ms);
    EXPECT_EQ(a.spec.estimate_ms, b.spec.estimate_ms);
    EXPECT_EQ(a.spec.timeout_ms, b.spec.timeout_ms);
    EXPECT_EQ(a.spec.not_before_ms, b.spec.not_before_ms);
    EXPECT_EQ(a.spec.lanes, b.spec.lanes);
    EXPECT_EQ(a.spec.gpu_mem_mib, b.spec.gpu_mem_mib);
    EXPECT_EQ(a.spec.share, b.spec.share);
    EXPECT_EQ(a.spec.deps, b.spec.deps);
    EXPECT_EQ(a.spec.user, b.spec.user);
    EXPECT_TRUE(a.spec.env.empty()) << "the environment is not read";
  }
  EXPECT_EQ((*light)[1].spec.user, "ann");
  ASSERT_EQ((*light)[1].spec.deps.size(), 2u);
  EXPECT_EQ((*light)[1].spec.deps[0].job_id, prep);
  EXPECT_EQ((*light)[1].spec.deps[1].kind, Dependency::Kind::kRequires);
  ASSERT_EQ((*light)[0].runs.size(), 1u) << "a running job's running run";
  EXPECT_EQ((*light)[0].runs[0].job_id, prep);
  EXPECT_EQ((*light)[0].runs[0].started_at_ms, 3);

  auto unbounded = store_->unbounded_job();
  ASSERT_TRUE(unbounded);
  EXPECT_TRUE(*unbounded == prep || *unbounded == bare) << "neither has an estimate or timeout";
}

// Schema 13 keeps what an ETA reads beside each spec (jobs.eta): filled for the jobs of an
// older store when it is migrated, and written again with a changed spec.
TEST_F(StatusJobsTest, TheEtaFieldsOfAnOlderStoreAreFilledWhenMigratedAndFollowTheSpec) {
  store_.reset();
  std::filesystem::remove(path_);
  {
    auto db = Database::open(path_, false);
    ASSERT_TRUE(db);
    ASSERT_TRUE(migrate(**db, 12));
    ASSERT_TRUE((*db)->exec(
        "INSERT INTO jobs(id, name, state, priority, queue_order, gpus, spec, submitted_at) VALUES "
        "(1, 'a', 'pending', 50, 1, 1, '{\"cwd\":\"/\",\"argv\":[\"true\"],\"est_ms\":60000,"
        "\"lanes\":[\"net\"],\"deps\":[{\"kind\":\"afterok\",\"target\":\"b\",\"job_id\":2}]}', 5), "
        "(2, 'b', 'running', 50, 2, 1, '{\"cwd\":\"/\",\"argv\":[\"true\"],\"timeout_ms\":9000}', 6), "
        "(3, 'c', 'held', 50, 3, 1, '{\"cwd\":\"/\",\"argv\":[\"true\"]}', 7);"));
  }
  auto reopened = Store::open(path_, false);
  ASSERT_TRUE(reopened) << reopened.error().message;
  store_ = std::move(*reopened);
  auto light = store_->eta_jobs();
  ASSERT_TRUE(light) << light.error().message;
  ASSERT_EQ(ids_of(*light), (Ids{1, 2, 3}));
  EXPECT_EQ((*light)[0].spec.estimate_ms, 60'000);
  EXPECT_EQ((*light)[0].spec.lanes, (std::vector<std::string>{"net"}));
  ASSERT_EQ((*light)[0].spec.deps.size(), 1u);
  EXPECT_EQ((*light)[0].spec.deps[0].job_id, 2);
  EXPECT_EQ((*light)[1].spec.timeout_ms, 9'000);
  auto unbounded = store_->unbounded_job();
  ASSERT_TRUE(unbounded);
  EXPECT_FALSE(*unbounded) << "job 3 has no bound, but it is held: it does not hold others up";

  auto a = store_->find_job(1);
  ASSERT_TRUE(a && *a);
  JobSpec changed = (**a).spec;
  changed.estimate_ms = 0;
  ASSERT_TRUE(store_->transaction([&] { return store_->set_spec(1, changed); }));
  unbounded = store_->unbounded_job();
  ASSERT_TRUE(unbounded);
  EXPECT_EQ(*unbounded, std::optional<int64_t>(1)) << "its estimate is gone with its new spec";
}

// A history written as it was (queue_bench seeds one) keeps its finish times.
TEST_F(StatusJobsTest, AJobInsertedFinishedKeepsItsFinishTime) {
  Job job;
  job.state = JobState::kFailed;
  job.spec.cwd = "/tmp";
  job.spec.argv = {"false"};
  job.finished_at_ms = 77;
  auto id = store_->insert_job(job);
  ASSERT_TRUE(id) << id.error().message;
  seed_job(JobState::kSucceeded, 50);
  EXPECT_EQ((*store_->find_job(*id))->finished_at_ms, 77);
  auto jobs = store_->status_jobs(1);
  ASSERT_TRUE(jobs);
  EXPECT_EQ(ids_of(jobs->finished), Ids{*id});
  EXPECT_EQ(store_->select_prunable(78, {}, 10)->job_ids.size(), 2u);
}

TEST_F(StatusJobsTest, AnEmptyStoreHasNothing) {
  auto jobs = store_->status_jobs(10);
  ASSERT_TRUE(jobs);
  EXPECT_TRUE(jobs->active.empty());
  EXPECT_TRUE(jobs->finished.empty());
  EXPECT_EQ(jobs->finished_total, 0);
}

// With forty times more finished jobs, status and the active jobs (the daemon's recovery)
// read about as much: neither walks every job or every run.
TEST_F(StatusJobsTest, ReadsDoNotGrowWithTheFinishedHistory) {
  for (int i = 0; i < 20; ++i) seed_job(JobState::kPending, 0, 1);
  auto cost = [&](const std::function<void()>& read) {
    int64_t steps = store_->vm_steps();
    read();
    return store_->vm_steps() - steps;
  };
  auto status = [&] {
    auto jobs = store_->status_jobs(10);
    ASSERT_TRUE(jobs);
    EXPECT_EQ(jobs->active.size(), 20u);
    EXPECT_EQ(jobs->active[0].runs.size(), 1u);
  };
  auto active = [&] {
    auto jobs = store_->list_jobs(true, true);
    ASSERT_TRUE(jobs);
    EXPECT_EQ(jobs->size(), 20u);
    EXPECT_EQ((*jobs)[19].runs.size(), 1u);
  };
  auto recovery = [&] {
    size_t seen = 0, runs = 0;
    auto st = store_->each_active_job([&](const Job& job) -> Status {
      ++seen;
      runs += job.runs.size();
      return ok();
    });
    ASSERT_TRUE(st) << st.error().message;
    EXPECT_EQ(seen, 20u);
    EXPECT_EQ(runs, 20u);
  };
  // gpuq status's page of the queue: its held, running and blocked jobs are found through
  // jobs_active, not by reading every row (as they were before).
  auto page = [&] {
    auto q = store_->queue_page(0, 5, false, 10);
    ASSERT_TRUE(q);
    EXPECT_EQ(q->pending.size(), 5u);
    EXPECT_EQ(q->pending_total, 20);
  };
  seed_history(50, 1000);
  int64_t status_small = cost(status);
  int64_t active_small = cost(active);
  int64_t recovery_small = cost(recovery);
  int64_t page_small = cost(page);
  seed_history(1950, 2000);
  int64_t status_large = cost(status);
  int64_t active_large = cost(active);
  int64_t recovery_large = cost(recovery);
  int64_t page_large = cost(page);
  EXPECT_LT(status_large, status_small * 3 / 2) << "steps with 50 finished jobs: " << status_small;
  EXPECT_LT(active_large, active_small * 3 / 2) << "steps with 50 finished jobs: " << active_small;
  EXPECT_LT(recovery_large, recovery_small * 3 / 2) << "steps with 50 finished jobs: " << recovery_small;
  EXPECT_LT(page_large, page_small * 3 / 2) << "steps with 50 finished jobs: " << page_small;
}

// The recovery's read: every unfinished job with its own runs, as a full load has them, less the
// environment (its own, and its array's), by state and then id (jobs_active's order), and with
// nothing sorted: a sort of a million unfinished rows was most of a restart.
TEST_F(StatusJobsTest, EachActiveJobIsTheFullLoadWithoutTheEnvironment) {
  int64_t pending = seed_job(JobState::kPending, 0, 2);
  seed_job(JobState::kSucceeded, 100, 1);
  int64_t running = seed_job(JobState::kRunning, 0, 1);
  int64_t held = seed_job(JobState::kHeld);
  Job with_env;
  with_env.state = JobState::kPending;
  with_env.spec.cwd = "/tmp";
  with_env.spec.argv = {"true"};
  with_env.spec.env = {{"HOME", "/root"}, {"SECRET", "x"}};
  with_env.spec.gpus = 3;
  with_env.spec.lanes = {"net"};
  with_env.spec.estimate_ms = 60'000;
  with_env.submitted_at_ms = 1;
  int64_t env_id = 0;
  ASSERT_TRUE(store_->transaction([&]() -> Status {
    auto id = store_->insert_job(with_env);
    if (!id) return tl::unexpected(id.error());
    env_id = *id;
    return ok();
  }));
  int64_t running_too = seed_job(JobState::kRunning, 0, 3);
  auto full = store_->list_jobs(true, true);
  ASSERT_TRUE(full);
  std::map<int64_t, Job> full_by_id;
  for (const Job& job : *full) full_by_id[job.id] = job;
  std::vector<Job> seen;
  int64_t sorts = store_->sorts();
  ASSERT_TRUE(store_->each_active_job([&](const Job& job) -> Status {
    seen.push_back(job);
    return ok();
  }));
  EXPECT_EQ(store_->sorts(), sorts);
  EXPECT_EQ(ids_of(seen), (Ids{held, pending, env_id, running, running_too}));
  ASSERT_EQ(seen.size(), full->size());
  for (size_t i = 0; i < seen.size(); ++i) {
    Job expected = full_by_id[seen[i].id];
    expected.spec.env.clear();
    EXPECT_EQ(seen[i].spec.env, expected.spec.env);
    EXPECT_TRUE(same_work(seen[i].spec, expected.spec)) << "job " << seen[i].id;
    EXPECT_EQ(seen[i].state, expected.state);
    EXPECT_EQ(seen[i].queue_order, expected.queue_order);
    ASSERT_EQ(seen[i].runs.size(), expected.runs.size()) << "job " << seen[i].id;
    for (size_t r = 0; r < seen[i].runs.size(); ++r) {
      EXPECT_EQ(seen[i].runs[r].job_id, seen[i].id);
      EXPECT_EQ(seen[i].runs[r].number, expected.runs[r].number);
    }
  }
  EXPECT_EQ(seen[2].spec.gpus, 3);
  EXPECT_EQ(seen[2].spec.lanes, std::vector<std::string>{"net"});
  EXPECT_EQ(full_by_id[env_id].spec.env.size(), 2u);
  EXPECT_EQ(seen[1].runs.size(), 2u);
  EXPECT_EQ(seen[4].runs.size(), 3u);
  // The visitor's error ends the walk and is returned.
  int visits = 0;
  auto stopped = store_->each_active_job([&](const Job&) -> Status {
    ++visits;
    return fail(Code::kInternal, "stop here");
  });
  ASSERT_FALSE(stopped);
  EXPECT_EQ(stopped.error().message, "stop here");
  EXPECT_EQ(visits, 1);
}

// GET /v1/status shows no job's environment, which is most of a spec's text: the status reads
// leave it out (SQLite removes it) and keep everything else a full load has.
TEST_F(StatusJobsTest, TheStatusReadsLeaveTheEnvironmentOut) {
  // Short specs are read whole and their environments dropped after decoding; a longer one's
  // is removed by SQLite (a medium one kept in the row, a long one kept apart): either way none.
  auto insert = [&](JobState state, int64_t finished_at_ms, size_t padding = 0) {
    Job job;
    job.state = state;
    job.spec.cwd = "/tmp";
    job.spec.argv = {"python", "train.py"};
    job.spec.env = {{"HOME", "/root"}, {"PATH", "/usr/bin"}};
    if (padding > 0) job.spec.env["PADDING"] = std::string(padding, 'x');
    job.spec.gpus = 2;
    job.spec.estimate_ms = 60'000;
    job.submitted_at_ms = 1;
    job.finished_at_ms = finished_at_ms;
    int64_t id = 0;
    EXPECT_TRUE(store_->transaction([&]() -> Status {
      auto inserted = store_->insert_job(job);
      if (!inserted) return tl::unexpected(inserted.error());
      id = *inserted;
      return ok();
    }));
    return id;
  };
  int64_t pending = insert(JobState::kPending, 0);
  int64_t held = insert(JobState::kHeld, 0, 800);
  int64_t finished = insert(JobState::kSucceeded, 100, 4000);
  auto full = store_->find_job(pending, false);
  ASSERT_TRUE(full && *full);
  ASSERT_EQ((*full)->spec.env.size(), 2u);  // stored, and read by a full load
  auto long_one = store_->find_job(finished, false);
  ASSERT_TRUE(long_one && *long_one);
  ASSERT_EQ((*long_one)->spec.env.at("PADDING").size(), 4000u);

  auto check = [&](const std::vector<Job>& jobs, const std::string& read) {
    for (const Job& job : jobs) {
      auto loaded = store_->find_job(job.id, false);
      ASSERT_TRUE(loaded && *loaded);
      JobSpec expected = (*loaded)->spec;
      expected.env.clear();
      EXPECT_TRUE(job.spec.env.empty()) << read << ": job " << job.id;
      EXPECT_TRUE(same_work(job.spec, expected)) << read << ": job " << job.id;
      EXPECT_EQ(job.spec.gpus, 2);
      EXPECT_EQ(job.spec.argv, (std::vector<std::string>{"python", "train.py"}));
    }
  };
  auto listed = store_->status_jobs(10);
  ASSERT_TRUE(listed) << listed.error().message;
  EXPECT_EQ(ids_of(listed->active), (Ids{pending, held}));
  EXPECT_EQ(ids_of(listed->finished), (Ids{finished}));
  check(listed->active, "status_jobs");
  check(listed->finished, "status_jobs");
  auto page = store_->queue_page(0, 10, false, 10, nullptr, 10);
  ASSERT_TRUE(page) << page.error().message;
  EXPECT_EQ(ids_of(page->pending), (Ids{pending}));
  EXPECT_EQ(ids_of(page->others), (Ids{held}));
  EXPECT_EQ(ids_of(page->finished), (Ids{finished}));
  check(page->pending, "queue_page");
  check(page->others, "queue_page");
  check(page->finished, "queue_page");
  std::vector<Job> active;
  ASSERT_TRUE(store_->each_active_job([&](const Job& job) -> Status {
    active.push_back(job);
    return ok();
  }));
  EXPECT_EQ(ids_of(active), (Ids{held, pending}));  // by state, then id
  check(active, "each_active_job");
}

// A deep queue, held and pending jobs interleaved by id, some with runs: every job is visited
// once, in the index's order, with its own runs and spec, to the end (a statement stepped again
// after its last row would start over), and a visitor's error deep in the walk still ends it.
TEST_F(StatusJobsTest, EachActiveJobVisitsADeepQueueOnceInOrder) {
  constexpr int kJobs = 4000;
  std::vector<int64_t> held, pending;
  std::map<int64_t, int> runs_of;
  ASSERT_TRUE(store_->transaction([&]() -> Status {
    for (int i = 0; i < kJobs; ++i) {
      JobState state = i % 3 == 0 ? JobState::kHeld : JobState::kPending;
      int runs = i % 7 == 0 ? 2 : 0;
      auto id = insert_job_rows(state, 0, runs, 0);
      if (!id) return tl::unexpected(id.error());
      (state == JobState::kHeld ? held : pending).push_back(*id);
      runs_of[*id] = runs;
    }
    return ok();
  }));
  Ids expected = held;  // by state ('held' before 'pending'), then id
  expected.insert(expected.end(), pending.begin(), pending.end());
  std::vector<int64_t> seen;
  bool all_whole = true;
  ASSERT_TRUE(store_->each_active_job([&](const Job& job) -> Status {
    seen.push_back(job.id);
    bool whole = job.spec.argv == std::vector<std::string>{"true"} && job.spec.cwd == "/tmp" &&
                 static_cast<int>(job.runs.size()) == runs_of[job.id];
    for (const gpuq::Run& run : job.runs) whole = whole && run.job_id == job.id;
    all_whole = all_whole && whole;
    return ok();
  }));
  EXPECT_EQ(seen.size(), static_cast<size_t>(kJobs)) << "each once, and the walk ends";
  EXPECT_EQ(seen, expected);
  EXPECT_TRUE(all_whole) << "each job with its own spec and runs";
  int visits = 0;
  auto stopped = store_->each_active_job([&](const Job&) -> Status {
    return ++visits == 3000 ? fail(Code::kInternal, "stop deep in the walk") : ok();
  });
  ASSERT_FALSE(stopped);
  EXPECT_EQ(stopped.error().message, "stop deep in the walk");
  EXPECT_EQ(visits, 3000);
}

}  // namespace
}  // namespace gpuq::store
