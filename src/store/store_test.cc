// SPDX-License-Identifier: Apache-2.0
#include "store/store.h"
#include "store/store_fixture.h"

#include <filesystem>
#include <functional>
#include <gtest/gtest.h>
#include <unistd.h>

#include "store/schema.h"

namespace gpuq::store {
namespace {

class StoreTest : public testing::StoreFixture {
 protected:
  Job sample_job() {
    Job job;
    job.spec.name = "train";
    job.spec.gpus = 2;
    job.spec.priority = 10;
    job.spec.cwd = "/tmp";
    job.spec.env = {{"A", "1"}};
    job.spec.argv = {"python", "train.py"};
    job.submitted_at_ms = 1000;
    job.queue_order = 1;
    return job;
  }
};

TEST_F(StoreTest, JobAndRunRoundTrip) {
  int64_t id = 0;
  ASSERT_TRUE(store_->transaction([&]() -> Status {
    auto inserted = store_->insert_job(sample_job());
    if (!inserted) return tl::unexpected(inserted.error());
    id = *inserted;
    gpuq::Run run;
    run.job_id = id;
    run.number = 1;
    run.gpus = {"gpu0", "gpu1"};
    run.gpu_indices = {0, 1};
    run.shim_pid = 42;
    run.shim_start_ticks = 99;
    run.started_at_ms = 2000;
    run.run_dir = "/x";
    auto run_id = store_->insert_run(run);
    if (!run_id) return tl::unexpected(run_id.error());
    return store_->finish_run(*run_id, 3000, 0, std::nullopt, RunOutcome::kSucceeded);
  }));
  auto job = store_->find_job(id);
  ASSERT_TRUE(job && *job);
  EXPECT_EQ((*job)->spec.name, "train");
  EXPECT_EQ((*job)->spec.argv, (std::vector<std::string>{"python", "train.py"}));
  EXPECT_EQ((*job)->spec.env.at("A"), "1");
  ASSERT_EQ((*job)->runs.size(), 1u);
  EXPECT_EQ((*job)->runs[0].gpu_indices, (std::vector<int>{0, 1}));
  EXPECT_EQ((*job)->runs[0].outcome, RunOutcome::kSucceeded);
  EXPECT_EQ((*job)->runs[0].exit_code, 0);
  EXPECT_FALSE((*job)->runs[0].signal.has_value());
  auto by_name = store_->find_job_by_name("train");
  ASSERT_TRUE(by_name && *by_name);
  EXPECT_EQ((*by_name)->id, id);
}

TEST_F(StoreTest, AJobStoredUnderWiderLimitsStaysReadable) {
  // Accepted by an earlier gpuq (estimates up to 100 years then; a year now): a restart must
  // still load it, or the daemon would refuse to start over one old job.
  Job job = sample_job();
  job.spec.estimate_ms = int64_t{400} * 24 * 3600 * 1000;
  job.spec.timeout_ms = int64_t{1} << 61;
  int64_t id = 0;
  ASSERT_TRUE(store_->transaction([&]() -> Status {
    auto inserted = store_->insert_job(job);
    if (!inserted) return tl::unexpected(inserted.error());
    id = *inserted;
    return ok();
  }));
  auto found = store_->find_job(id, false);
  ASSERT_TRUE(found) << found.error().message;
  ASSERT_TRUE(*found);
  EXPECT_EQ((*found)->spec.estimate_ms, job.spec.estimate_ms);
  EXPECT_EQ((*found)->spec.timeout_ms, job.spec.timeout_ms);
}

TEST_F(StoreTest, AFailedTransactionLeavesNoEvent) {
  auto result = store_->transaction([&]() -> Status {
    Event e;
    e.kind = "job.submitted";
    if (auto seq = store_->append_event(e); !seq) return tl::unexpected(seq.error());
    return fail(Code::kInvalidArgument, "changed my mind");
  });
  EXPECT_FALSE(result);
  EXPECT_EQ(*store_->last_seq(), 0);
}

TEST_F(StoreTest, ConstraintsRejectImpossibleRows) {
  Job job = sample_job();
  job.spec.gpus = -1;
  auto result = store_->transaction([&]() -> Status {
    auto inserted = store_->insert_job(job);
    if (!inserted) return tl::unexpected(inserted.error());
    return ok();
  });
  EXPECT_FALSE(result);
}

TEST_F(StoreTest, NamesAreUnique) {
  auto insert = [&] {
    return store_->transaction([&]() -> Status {
      auto inserted = store_->insert_job(sample_job());
      if (!inserted) return tl::unexpected(inserted.error());
      return ok();
    });
  };
  EXPECT_TRUE(insert());
  EXPECT_FALSE(insert());
}

TEST_F(StoreTest, EventsComeBackInOrder) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(store_->transaction([&]() -> Status {
      Event e;
      e.kind = "k" + std::to_string(i);
      e.job = i;
      e.data = {{"i", i}};
      auto seq = store_->append_event(e);
      if (!seq) return tl::unexpected(seq.error());
      return ok();
    }));
  }
  auto events = store_->events_after(2, 10);
  ASSERT_TRUE(events);
  ASSERT_EQ(events->size(), 3u);
  EXPECT_EQ((*events)[0].seq, 3);
  EXPECT_EQ((*events)[0].kind, "k2");
  EXPECT_EQ((*events)[2].data["i"], 4);
}

TEST_F(StoreTest, ANewerSchemaIsRefused) {
  store_.reset();
  {
    auto db = Database::open(path_, false);
    ASSERT_TRUE(db);
    ASSERT_TRUE((*db)->exec("INSERT INTO schema_migrations(version, applied_at) VALUES (999, 0)"));
  }
  auto reopened = Store::open(path_, false);
  ASSERT_FALSE(reopened);
  EXPECT_NE(reopened.error().message.find("written by a newer gpuq"), std::string::npos)
      << reopened.error().message;
}

TEST_F(StoreTest, ReopeningKeepsData) {
  ASSERT_TRUE(store_->transaction([&]() -> Status {
    auto inserted = store_->insert_job(sample_job());
    if (!inserted) return tl::unexpected(inserted.error());
    return ok();
  }));
  store_.reset();
  auto reopened = Store::open(path_, false);
  ASSERT_TRUE(reopened);
  auto jobs = (*reopened)->list_jobs(false, false);
  ASSERT_TRUE(jobs);
  EXPECT_EQ(jobs->size(), 1u);
  auto db = Database::open(path_, false);
  ASSERT_TRUE(db);
  EXPECT_EQ(*schema_version(**db), current_schema_version());
}

}  // namespace
}  // namespace gpuq::store

namespace gpuq::store {
namespace {
TEST_F(StoreTest, ReplacesSeveralResourcesWithOneStatement) {
  std::vector<Resource> resources = {{"gpu0", 0, "u0", "m", 1, 0}, {"gpu1", 1, "u1", "m", 1, 0}};
  ASSERT_TRUE(store_->transaction([&] { return store_->replace_resources(resources); }));
  ASSERT_TRUE(store_->transaction([&] { return store_->replace_resources(resources); }));
  auto stored = store_->resources();
  ASSERT_TRUE(stored);
  ASSERT_EQ(stored->size(), 2u);
  EXPECT_EQ((*stored)[1].name, "gpu1");
}
}  // namespace
}  // namespace gpuq::store

namespace gpuq::store {
namespace {
TEST_F(StoreTest, AVersionOneStoreIsMigratedKeepingItsJobs) {
  store_.reset();
  std::filesystem::remove(path_);
  {
    auto db = Database::open(path_, false);
    ASSERT_TRUE(db);
    ASSERT_TRUE(migrate(**db, 1));
    ASSERT_TRUE((*db)->exec(
        "INSERT INTO jobs(id, state, priority, queue_order, gpus, spec, submitted_at) "
        "VALUES (1, 'pending', 50, 1, 0, '{\"gpus\":0,\"priority\":50,\"cwd\":\"/\",\"env\":{},"
        "\"argv\":[\"true\"]}', 5)"));
  }
  auto reopened = Store::open(path_, false);
  ASSERT_TRUE(reopened) << reopened.error().message;
  auto job = (*reopened)->find_job(1);
  ASSERT_TRUE(job && *job) << (job ? "missing" : job.error().message);
  EXPECT_EQ((*job)->retry_at_ms, 0);
  EXPECT_TRUE((*reopened)->transaction([&] { return (*reopened)->set_retry_at(1, 99); }));
  EXPECT_EQ((*(*reopened)->find_job(1))->retry_at_ms, 99);
  auto db = Database::open(path_, false);
  EXPECT_EQ(*schema_version(**db), current_schema_version());
}

// Schema 14 rebuilds `runs` to allow the outcome not-started: every column of a run of an
// older store, and its samples, come through.
TEST_F(StoreTest, AVersionThirteenStoreKeepsEveryColumnOfItsRunsAndTakesNotStarted) {
  store_.reset();
  std::filesystem::remove(path_);
  {
    auto db = Database::open(path_, false);
    ASSERT_TRUE(db);
    ASSERT_TRUE(migrate(**db, 13));
    ASSERT_TRUE((*db)->exec(
        "INSERT INTO jobs(id, state, priority, queue_order, gpus, spec, submitted_at) VALUES "
        "(1, 'running', 50, 1, 1, '{\"cwd\":\"/\",\"argv\":[\"true\"]}', 5);"
        "INSERT INTO runs(id, job_id, number, gpus, gpu_indices, shim_pid, shim_start_ticks, "
        "started_at, ended_at, exit_code, signal, outcome, run_dir, stop_reason, verified, run_id, "
        "job_name, peak_gpu_mem_mib, preempted_by, preempt_deadline, cleanup, boot_id, log_note, "
        "seen_gpus, seen_gpu_indices, cpu_usec, peak_memory_bytes) VALUES "
        "(7, 1, 1, '[\"gpu0\"]', '[0]', 41, 42, 10, 20, 3, NULL, 'failed', '/r/1', 'timeout', 1, "
        "'1-1-ab', 'train', 900, 4, 30, 'attention', 'boot-a', 'the disk was full', '[\"gpu1\"]', "
        "'[1]', 5000, 6000),"
        "(8, 1, 2, '[]', '[]', 43, 44, 21, NULL, NULL, NULL, 'running', '/r/2', '', NULL, '', '', "
        "NULL, 0, 0, 'done', '', '', '[]', '[]', NULL, NULL);"
        "INSERT INTO run_samples(run_id, time, util, mem_mib) VALUES (7, 15, 80, 900);"));
  }
  auto reopened = Store::open(path_, false);
  ASSERT_TRUE(reopened) << reopened.error().message;
  store_ = std::move(*reopened);
  auto job = store_->find_job(1, true);
  ASSERT_TRUE(job && *job);
  ASSERT_EQ((**job).runs.size(), 2u);
  const gpuq::Run& r = (**job).runs[0];
  EXPECT_EQ(r.id, 7);
  EXPECT_EQ(r.gpus, (std::vector<std::string>{"gpu0"}));
  EXPECT_EQ(r.gpu_indices, (std::vector<int>{0}));
  EXPECT_EQ(r.shim_pid, 41);
  EXPECT_EQ(r.shim_start_ticks, 42u);
  EXPECT_EQ(r.started_at_ms, 10);
  EXPECT_EQ(r.ended_at_ms, 20);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.outcome, RunOutcome::kFailed);
  EXPECT_EQ(r.run_dir, "/r/1");
  EXPECT_EQ(r.stop_reason, StopReason::kTimeout);
  EXPECT_EQ(r.verified, true);
  EXPECT_EQ(r.run_id, "1-1-ab");
  EXPECT_EQ(r.peak_gpu_mem_mib, 900);
  EXPECT_EQ(r.preempted_by, 4);
  EXPECT_EQ(r.preempt_deadline_ms, 30);
  EXPECT_EQ(r.boot_id, "boot-a");
  EXPECT_EQ(r.log_note, "the disk was full");
  EXPECT_EQ(r.seen_gpus, (std::vector<std::string>{"gpu1"}));
  EXPECT_EQ(r.seen_gpu_indices, (std::vector<int>{1}));
  EXPECT_EQ(r.cpu_usec, 5000);
  EXPECT_EQ(r.peak_memory_bytes, 6000);
  auto samples = store_->run_samples({7}, 0, 100);
  ASSERT_TRUE(samples) << samples.error().message;
  EXPECT_EQ(samples->at(7).size(), 1u);
  auto running = store_->running_runs();
  ASSERT_TRUE(running);
  ASSERT_EQ(running->size(), 1u) << "runs_running serves again";
  EXPECT_TRUE(store_->transaction([&] {
    return store_->finish_run(8, 25, std::nullopt, std::nullopt, RunOutcome::kNotStarted);
  }));
  EXPECT_EQ((*store_->find_job(1, true))->runs[1].outcome, RunOutcome::kNotStarted);
}

TEST_F(StoreTest, RunsKeepTheirMarkerPeakPreemptionAndCleanupState) {
  int64_t job_id = 0, first = 0, second = 0;
  ASSERT_TRUE(store_->transaction([&]() -> Status {
    auto inserted = store_->insert_job(sample_job());
    if (!inserted) return tl::unexpected(inserted.error());
    job_id = *inserted;
    gpuq::Run run;
    run.job_id = job_id;
    run.number = 1;
    run.gpus = {"gpu0"};
    run.started_at_ms = 1000;
    run.run_dir = "/r1";
    run.run_id = "1-1-abc";
    auto id = store_->insert_run(run, "train");
    if (!id) return tl::unexpected(id.error());
    first = *id;
    run.number = 2;
    run.run_dir = "/r2";
    run.run_id = "1-2-def";
    id = store_->insert_run(run, "train");
    if (!id) return tl::unexpected(id.error());
    second = *id;
    if (auto st = store_->set_preemption(first, 7, 12345); !st) return st;
    if (auto st = store_->set_peak_gpu_mem(first, 900); !st) return st;
    if (auto st = store_->set_peak_gpu_mem(second, 1200); !st) return st;
    if (auto st = store_->finish_run(first, 2000, 75, std::nullopt, RunOutcome::kPreempted); !st) return st;
    return store_->finish_run(second, 3000, 0, std::nullopt, RunOutcome::kSucceeded);
  }));
  auto runs = store_->runs_of(job_id);
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].run_id, "1-1-abc");
  EXPECT_EQ((*runs)[0].preempted_by, 7);
  EXPECT_EQ((*runs)[0].preempt_deadline_ms, 12345);
  EXPECT_EQ((*runs)[0].peak_gpu_mem_mib, 900);
  // A new run needs its cleanup until the sweep confirms it.
  auto pending = store_->runs_in_cleanup(CleanupState::kPending);
  ASSERT_TRUE(pending);
  EXPECT_EQ(pending->size(), 2u);
  EXPECT_EQ((*runs)[0].cpu_usec, std::nullopt);  // no cgroup accounted for it yet
  ASSERT_TRUE(store_->transaction([&]() -> Status {
    if (auto st = store_->set_cleanup(first, CleanupState::kDone); !st) return st;
    // Its cgroup's accounting: CPU time always, peak memory only with the memory controller.
    if (auto st = store_->set_run_usage(first, 2'500'000, std::nullopt); !st) return st;
    if (auto st = store_->set_run_usage(second, 10, 1 << 20); !st) return st;
    return store_->set_cleanup(second, CleanupState::kAttention);
  }));
  runs = store_->runs_of(job_id);
  EXPECT_EQ((*runs)[0].cpu_usec, 2'500'000);
  EXPECT_EQ((*runs)[0].peak_memory_bytes, std::nullopt);
  EXPECT_EQ((*runs)[1].peak_memory_bytes, 1 << 20);
  EXPECT_TRUE(store_->runs_in_cleanup(CleanupState::kPending)->empty());
  ASSERT_EQ(store_->runs_in_cleanup(CleanupState::kAttention)->size(), 1u);
  // Only succeeded runs teach a footprint.
  auto footprint = store_->learned_footprint("train");
  ASSERT_TRUE(footprint && *footprint);
  EXPECT_EQ((*footprint)->peak_mib, 1200);
  EXPECT_EQ((*footprint)->runs, 1);
  EXPECT_FALSE(*store_->learned_footprint("eval"));
  EXPECT_EQ(*store_->footprint_names(), std::vector<std::string>{"train"});
}

// Schema 18 keeps a long spec apart from its job's row: a store of version 17 keeps every
// job's spec, the long ones move to job_specs, and a pruned job takes its spec with it.
TEST_F(StoreTest, AVersionSeventeenStoreKeepsItsLongSpecsApartFromTheJobs) {
  store_.reset();
  std::filesystem::remove(path_);
  const std::string script(3000, '#');
  {
    auto db = Database::open(path_, false);
    ASSERT_TRUE(db);
    ASSERT_TRUE(migrate(**db, 17));
    ASSERT_TRUE((*db)->exec(
        "INSERT INTO jobs(id, name, state, priority, queue_order, gpus, spec, submitted_at, "
        "finished_at) VALUES "
        "(1, 'a', 'succeeded', 50, 1, 0, '{\"cwd\":\"/a\",\"script\":{\"name\":\"a.sh\","
        "\"text\":\"" + script + "\"}}', 5, 9), "
        "(2, NULL, 'pending', 10, 2, 1, '{\"cwd\":\"/b\",\"argv\":[\"false\"],"
        "\"env\":{\"K\":\"v\"}}', 6, NULL);"));
  }
  auto reopened = Store::open(path_, false);
  ASSERT_TRUE(reopened) << reopened.error().message;
  Store& store = **reopened;
  auto first = store.find_job(1);
  auto second = store.find_job(2);
  ASSERT_TRUE(first && second) << (first ? second.error().message : first.error().message);
  ASSERT_TRUE(*first && *second);
  EXPECT_EQ((*first)->spec.script_text, script);
  EXPECT_EQ((*second)->spec.argv, std::vector<std::string>{"false"});
  EXPECT_EQ((*second)->spec.env.at("K"), "v");
  auto ids_of = [&](const std::string& sql) {
    std::vector<int64_t> ids;
    auto db = Database::open(path_, true);
    EXPECT_TRUE(db);
    auto rows = (*db)->prepare(sql);
    EXPECT_TRUE(rows);
    while (rows && *rows->step()) ids.push_back(rows->int64(0));
    return ids;
  };
  EXPECT_EQ(ids_of("SELECT id FROM job_specs ORDER BY id"), std::vector<int64_t>{1});
  EXPECT_EQ(ids_of("SELECT id FROM jobs WHERE spec = '' ORDER BY id"), std::vector<int64_t>{1});
  ASSERT_TRUE(store.transaction([&] { return store.prune_jobs({1}); }));
  EXPECT_TRUE(ids_of("SELECT id FROM job_specs").empty()) << "the pruned job's spec went with it";
}

// A spec that grows long moves apart, and one that becomes short comes back into its row.
TEST_F(StoreTest, ASpecChangedToLongOrShortIsKeptWhereItsLengthSays) {
  int64_t id = seed_job(JobState::kPending);
  JobSpec spec = (*store_->find_job(id))->spec;
  spec.script_name = "long.sh";
  spec.script_text = std::string(5000, '#');
  ASSERT_TRUE(store_->transaction([&] { return store_->set_spec(id, spec); }));
  EXPECT_EQ((*store_->find_job(id))->spec.script_text, spec.script_text);
  auto db = Database::open(path_, true);
  ASSERT_TRUE(db);
  auto count = [&](const std::string& sql) {
    auto row = (*db)->prepare(sql);
    EXPECT_TRUE(row && *row->step());
    return row ? row->int64(0) : -1;
  };
  EXPECT_EQ(count("SELECT COUNT(*) FROM job_specs"), 1);
  spec.script_text = "true";
  ASSERT_TRUE(store_->transaction([&] { return store_->set_spec(id, spec); }));
  EXPECT_EQ((*store_->find_job(id))->spec.script_text, "true");
  EXPECT_EQ(count("SELECT COUNT(*) FROM job_specs"), 0);
  EXPECT_EQ(count("SELECT length(spec) > 0 FROM jobs"), 1);
}

// The pages one transaction adds to the write-ahead log (4 KiB each, plus a 24-byte header).
int64_t wal_frames_of(const std::string& path, Store& store, const std::function<Status()>& writes) {
  auto db = Database::open(path, false);
  EXPECT_TRUE(db && (*db)->exec("PRAGMA wal_checkpoint(TRUNCATE)"));
  std::error_code error;
  auto before = std::filesystem::file_size(path + "-wal", error);
  if (error) before = 0;
  EXPECT_TRUE(store.transaction(writes));
  auto after = std::filesystem::file_size(path + "-wal");
  return static_cast<int64_t>(after > before ? after - before : 0) / (4096 + 24);
}

TEST_F(StoreTest, AStateChangeOfAJobWithALongScriptWritesItsSmallRowNotItsScript) {
  Job job;
  job.state = JobState::kPending;
  job.spec.cwd = "/tmp";
  job.spec.script_name = "train.sh";
  job.spec.script_text = "#!/bin/bash\n" + std::string(64 * 1024, '#') + "\ntrue\n";
  job.submitted_at_ms = 1;
  int64_t id = 0;
  ASSERT_TRUE(store_->transaction([&]() -> Status {
    auto inserted = store_->insert_job(job);
    if (!inserted) return tl::unexpected(inserted.error());
    id = *inserted;
    return ok();
  }));
  // Each change: the jobs row's page and those of the indexes on its state, where the 64 KiB
  // script alone is 16 pages. (SQLite writes a row whose size is unchanged in place, only the
  // pages that differ: pending -> running did not rewrite the script even beside the state;
  // a change of size, as to succeeded with its finish time, rewrote all of it.)
  int64_t started = wal_frames_of(path_, *store_, [&] {
    return store_->set_job_state(id, JobState::kRunning, "", std::nullopt);
  });
  int64_t finished = wal_frames_of(path_, *store_, [&] {
    return store_->set_job_state(id, JobState::kSucceeded, "", 1'000);
  });
  EXPECT_GT(started, 0);
  EXPECT_LE(started, 6) << "the start wrote " << started << " pages";
  EXPECT_GT(finished, 0);
  EXPECT_LE(finished, 6) << "the end wrote " << finished << " pages";
  auto read = store_->find_job(id);
  ASSERT_TRUE(read && *read);
  EXPECT_EQ((*read)->spec.script_text, job.spec.script_text);
  EXPECT_EQ((*read)->state, JobState::kSucceeded);
}

}  // namespace
}  // namespace gpuq::store
