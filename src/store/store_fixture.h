// SPDX-License-Identifier: Apache-2.0
// Test support: a fresh store in a temporary directory per test, removed afterwards. Included
// by the store's tests only. One thread.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "store/store.h"

namespace gpuq::store::testing {

class StoreFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpuq-store-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name() + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "gpuq.db").string();
    auto opened = Store::open(path_, false);
    ASSERT_TRUE(opened) << opened.error().message;
    store_ = std::move(*opened);
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  // A job in `state` (finished ones at `finished_at_ms`) with `runs` finished runs (cleanup
  // done) and `events` events; returns its id. Test rows only: the spec is minimal.
  int64_t seed_job(JobState state, int64_t finished_at_ms = 0, int runs = 0, int events = 0) {
    int64_t id = 0;
    auto added = store_->transaction([&]() -> Status {
      auto inserted = insert_job_rows(state, finished_at_ms, runs, events);
      if (!inserted) return tl::unexpected(inserted.error());
      id = *inserted;
      return ok();
    });
    EXPECT_TRUE(added) << added.error().message;
    return id;
  }
  // `count` finished jobs with one run and one event each, finished at `first_finished_ms`,
  // +1, +2...: a long history, in one transaction.
  void seed_history(int count, int64_t first_finished_ms) {
    auto added = store_->transaction([&]() -> Status {
      for (int i = 0; i < count; ++i) {
        auto inserted = insert_job_rows(JobState::kSucceeded, first_finished_ms + i, 1, 1);
        if (!inserted) return tl::unexpected(inserted.error());
      }
      return ok();
    });
    EXPECT_TRUE(added) << added.error().message;
  }
  Result<int64_t> insert_job_rows(JobState state, int64_t finished_at_ms, int runs, int events) {
    Job job;
    job.state = state;
    job.spec.cwd = "/tmp";
    job.spec.argv = {"true"};
    job.submitted_at_ms = 1;
    auto id = store_->insert_job(job);
    if (!id) return id;
    if (is_terminal(state)) {
      if (auto st = store_->set_job_state(*id, state, "", finished_at_ms); !st) return tl::unexpected(st.error());
    }
    for (int n = 1; n <= runs; ++n) {
      gpuq::Run run;
      run.job_id = *id;
      run.number = n;
      run.started_at_ms = 1;
      run.run_dir = "/runs/" + std::to_string(*id) + "/" + std::to_string(n);
      auto run_id = store_->insert_run(run);
      if (!run_id) return run_id;
      auto st = store_->finish_run(*run_id, 2, 0, std::nullopt, RunOutcome::kSucceeded);
      if (st) st = store_->set_cleanup(*run_id, CleanupState::kDone);
      if (!st) return tl::unexpected(st.error());
    }
    for (int n = 0; n < events; ++n) {
      Event e;
      e.kind = n == 0 ? "job.submitted" : "job.succeeded";
      e.job = *id;
      e.time_ms = finished_at_ms;
      if (auto seq = store_->append_event(e); !seq) return seq;
    }
    return id;
  }
  // A job-less event (daemon.*, queue.*, resource.*); returns its seq.
  int64_t seed_event(const std::string& kind, int64_t time_ms) {
    Event e;
    e.kind = kind;
    e.time_ms = time_ms;
    auto seq = store_->append_event(e);
    EXPECT_TRUE(seq) << seq.error().message;
    return seq ? *seq : 0;
  }

  std::filesystem::path dir_;
  std::string path_;
  std::unique_ptr<Store> store_;
};

// The ids of `jobs`, in their order.
inline std::vector<int64_t> ids_of(const std::vector<Job>& jobs) {
  std::vector<int64_t> out;
  for (const Job& job : jobs) out.push_back(job.id);
  return out;
}

}  // namespace gpuq::store::testing
