// SPDX-License-Identifier: Apache-2.0
// Test support for the queue actor's unit tests: a Queue over a FakeWorld and a real store in
// a temporary directory, with helpers to submit, read jobs and events, and end runs. Included
// by the daemon's tests only. One thread.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "daemon/queue.h"
#include "daemon/testing/fake_world.h"
#include "gpu/discovery.h"
#include "store/store.h"

namespace gpuq::daemon::testing {

// An empty directory named for the running test, for its store: on tmpfs where there is one,
// since every commit syncs and these tests commit thousands of times.
inline std::filesystem::path fresh_test_dir(const std::string& prefix) {
  std::filesystem::path base = std::filesystem::is_directory("/dev/shm") ? std::filesystem::path("/dev/shm")
                                                                         : std::filesystem::temp_directory_path();
  std::filesystem::path dir = base / (prefix + "-" + std::to_string(getpid()) + "-" +
                                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

class QueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fresh_test_dir("gpuq-queue");
    auto opened = store::Store::open((dir_ / "gpuq.db").string(), false);
    ASSERT_TRUE(opened) << opened.error().message;
    store_ = std::move(*opened);
    world_ = std::make_unique<FakeWorld>(*store_);
  }
  void TearDown() override {
    if (queue_) queue_->stop();
    queue_.reset();
    world_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Starts (or, after stop(), restarts) the daemon's queue on `gpus` and runs what it posts.
  void start(const std::string& gpus = "fake:2") {
    auto inventory = gpu::discover(gpus);
    ASSERT_TRUE(inventory) << inventory.error().message;
    QueueOptions options = options_;
    options.layout = layout();
    options.boot_id = boot_id_;
    queue_ = std::make_unique<Queue>(*world_, *store_, *inventory, config_, options);
    auto started = queue_->start();
    ASSERT_TRUE(started) << started.error().message;
    world_->run();
  }
  // A daemon restart: the old queue stops (runs go on), a new one starts on the same store.
  void restart(const std::string& gpus = "fake:2") {
    queue_->stop();
    queue_.reset();
    world_->run();
    start(gpus);
  }

  HomeLayout layout() const { return HomeLayout{"/fake-home"}; }
  std::string run_dir(int64_t job, int run) const { return layout().run_dir(job, run); }

  static JobSpec command(const std::string& shell, int gpus = 1) {
    JobSpec spec;
    spec.argv = {"sh", "-c", shell};
    spec.cwd = "/tmp";
    spec.env = {{"PATH", "/usr/bin:/bin"}};
    spec.gpus = gpus;
    return spec;
  }
  int64_t submit(JobSpec spec) {
    auto submitted = queue_->submit(std::move(spec));
    EXPECT_TRUE(submitted) << submitted.error().message;
    world_->run();
    return submitted ? submitted->job.id : 0;
  }
  Job job(int64_t id) {
    auto found = store_->find_job(id, true);
    EXPECT_TRUE(found && *found);
    return found && *found ? **found : Job{};
  }
  JobState state(int64_t id) { return job(id).state; }
  // The kinds of the events of `job` (every event when 0), oldest first.
  std::vector<std::string> kinds(int64_t job_id = 0) {
    std::vector<std::string> out;
    auto events = store_->events_after(0, 100000);
    EXPECT_TRUE(events);
    for (const auto& e : *events) {
      if (job_id == 0 || e.job == job_id) out.push_back(e.kind);
    }
    return out;
  }
  int count(const std::string& kind, int64_t job_id = 0) {
    int n = 0;
    for (const auto& k : kinds(job_id)) n += k == kind;
    return n;
  }
  // The data of the latest event of `kind` (of `job_id`'s events only, unless 0).
  nlohmann::json last_data(const std::string& kind, int64_t job_id = 0) {
    auto events = store_->events_after(0, 100000);
    nlohmann::json data;
    for (const auto& e : *events) {
      if (e.kind == kind && (job_id == 0 || e.job == job_id)) data = e.data;
    }
    return data;
  }
  static runner::ExitRecord exited(int code) {
    runner::ExitRecord r;
    r.exit_code = code;
    r.started_at_ms = 1;
    r.ended_at_ms = 2;
    return r;
  }
  static runner::ExitRecord stopped_by_signal(int sig) {
    runner::ExitRecord r;
    r.signal = sig;
    r.stop_requested = true;
    r.started_at_ms = 1;
    r.ended_at_ms = 2;
    return r;
  }
  // Ends run `run` of `job` with `record` and lets the actor handle it.
  void end_run(int64_t job_id, int run, runner::ExitRecord record) {
    world_->exit_shim(run_dir(job_id, run), std::move(record));
    world_->run();
  }
  FakeWorld::Shim* shim(int64_t job_id, int run) { return world_->shim_of(run_dir(job_id, run)); }

  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<FakeWorld> world_;
  std::unique_ptr<Queue> queue_;
  Config config_;
  QueueOptions options_;  // start() fills in the layout and the boot id
  std::string boot_id_ = "boot-a";
};

}  // namespace gpuq::daemon::testing
