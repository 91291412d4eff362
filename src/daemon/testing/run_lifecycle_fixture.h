// SPDX-License-Identifier: Apache-2.0
// The run lifecycle's test fixture: a FakeWorld, a real store in a scratch directory, and a
// small fake host standing in for the queue, which keeps everything the lifecycle tells it for
// the test to read. Shared by the lifecycle's test files; test code only.
#pragma once

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "daemon/queue_test_support.h"
#include "daemon/run_lifecycle.h"
#include "daemon/testing/fake_world.h"
#include "gpu/discovery.h"

namespace gpuq::daemon::testing {

// The queue as the lifecycle sees it: transactions through the world, jobs in the store and
// their ActiveJob in a map, GPU slots as lists of holders; everything the lifecycle tells it is
// kept for the test to read.
class FakeHost : public RunHost {
  FakeWorld& world_;
  store::Store& store_;

 public:
  FakeHost(FakeWorld& world, store::Store& store, size_t gpus)
      : world_(world), store_(store), holders(gpus), cleaning(gpus, false), attention(gpus) {}

  // As the queue's: the writes kept by commit_later() ride in the next commit.
  Status commit(const std::function<Status()>& writes) override {
    auto committed = world_.commit([&]() -> Status {
      for (const auto& later : later_writes) {
        if (auto st = later(); !st) return st;
      }
      return writes();
    });
    if (committed) later_writes.clear();
    return committed;
  }
  void commit_later(std::function<Status()> writes) override { later_writes.push_back(std::move(writes)); }
  Status add_event(const std::string& kind, std::optional<int64_t> job, std::optional<int> run,
                   nlohmann::json data) override {
    Event event;
    event.time_ms = world_.now_ms();
    event.kind = kind;
    event.job = job;
    event.run = run;
    event.data = std::move(data);
    auto seq = store_.append_event(std::move(event));
    if (!seq) return tl::unexpected(seq.error());
    return ok();
  }
  Status set_state(int64_t job_id, JobState from, JobState to, const std::string& reason) override {
    if (!is_legal_transition(from, to)) return fail(Code::kInternal, "illegal transition");
    std::optional<int64_t> finished;
    if (is_terminal(to)) finished = world_.now_ms();
    return store_.set_job_state(job_id, to, reason, finished);
  }
  void retry_later(const std::string& key, std::function<void()> attempt) override {
    kept[key] = std::move(attempt);
  }
  // What the queue's retry timer does: every kept attempt once more.
  void retry_kept() {
    auto attempts = std::move(kept);
    kept.clear();
    for (auto& [key, attempt] : attempts) attempt();
  }

  Result<Job> load_job(int64_t id, bool with_runs) override {
    auto job = store_.find_job(id, with_runs);
    if (!job) return tl::unexpected(job.error());
    if (!*job) return fail(Code::kNotFound, "no such job");
    return std::move(**job);
  }
  ActiveJob* active_job(int64_t id) override {
    auto it = active.find(id);
    return it == active.end() ? nullptr : &it->second;
  }
  std::vector<int> lanes_of(const JobSpec&) const override { return {}; }
  void note_start_error(int64_t job_id, std::optional<std::string> why) override {
    if (why) {
      start_errors[job_id] = *why;
    } else {
      start_errors.erase(job_id);
    }
  }
  void note_held_by_daemon(int64_t job_id, const std::string& reason) override { held[job_id] = reason; }
  void note_finished(int64_t job_id, JobState state) override {
    active.erase(job_id);
    finished[job_id] = state;
  }
  void note_footprint(const std::string& name) override { footprints.push_back(name); }
  void request_pass() override { ++passes; }
  void hold_slots(int64_t job_id, const std::vector<int>& slots, const std::vector<int>&) override {
    for (int slot : slots) holders[slot].push_back(job_id);
  }
  void free_slots(int64_t job_id, const std::vector<int>& slots, const std::vector<int>&) override {
    for (int slot : slots) std::erase(holders[slot], job_id);
  }
  void set_cleaning(int slot, bool on) override { cleaning[slot] = on; }
  void set_attention(int slot, nlohmann::json a) override { attention[slot] = std::move(a); }
  Metrics& metrics() override { return metrics_; }

  std::vector<std::function<Status()>> later_writes;
  std::map<std::string, std::function<void()>> kept;
  std::map<int64_t, ActiveJob> active;
  std::map<int64_t, std::string> start_errors;
  std::map<int64_t, std::string> held;
  std::map<int64_t, JobState> finished;
  std::vector<std::string> footprints;
  int passes = 0;
  std::vector<std::vector<int64_t>> holders;  // per slot
  std::vector<bool> cleaning;
  std::vector<nlohmann::json> attention;

 private:
  Metrics metrics_;
};

class RunLifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fresh_test_dir("gpuq-lifecycle");
    auto opened = store::Store::open((dir_ / "gpuq.db").string(), false);
    ASSERT_TRUE(opened) << opened.error().message;
    store_ = std::move(*opened);
    world_ = std::make_unique<FakeWorld>(*store_);
    auto inventory = gpu::discover("fake:2");
    ASSERT_TRUE(inventory) << inventory.error().message;
    inventory_ = std::move(*inventory);
    host_ = std::make_unique<FakeHost>(*world_, *store_, inventory_.resources.size());
    runs_ = std::make_unique<RunLifecycle>(*world_, *store_, inventory_, config_,
                                           RunPlaces{HomeLayout{"/fake-home"}, "boot-a", 022}, *host_);
  }
  void TearDown() override {
    runs_->stop();
    runs_.reset();
    world_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A pending job in the store and its ActiveJob in the host, as the queue would have them.
  int64_t add_job(int64_t timeout_ms = 0) {
    Job job;
    job.spec.argv = {"sh", "-c", "true"};
    job.spec.timeout_ms = timeout_ms;
    return insert_job(std::move(job));
  }
  // `job` (its spec's cwd and gpus filled in when unset) in the store, pending, and its
  // ActiveJob with the spec's GPUs, timeout, preemption mode and retries.
  int64_t insert_job(Job job) {
    if (job.spec.cwd.empty()) job.spec.cwd = "/tmp";
    if (job.spec.gpus == 0) job.spec.gpus = 1;
    job.submitted_at_ms = world_->now();
    int64_t id = 0;
    EXPECT_TRUE(world_->commit([&]() -> Status {
      auto inserted = store_->insert_job(job);
      if (!inserted) return tl::unexpected(inserted.error());
      id = *inserted;
      return ok();
    }));
    ActiveJob active;
    active.id = id;
    active.gpus = job.spec.gpus;
    active.timeout_ms = job.spec.timeout_ms;
    active.preempt = job.spec.preempt;
    active.retries = job.spec.retries;
    host_->active[id] = active;
    return id;
  }
  std::string run_dir(int64_t job, int run) const { return HomeLayout{"/fake-home"}.run_dir(job, run); }
  Job job(int64_t id) {
    auto found = store_->find_job(id, true);
    EXPECT_TRUE(found && *found);
    return found && *found ? **found : Job{};
  }
  std::vector<std::string> kinds(int64_t job_id) {
    std::vector<std::string> out;
    auto events = store_->events_after(0, 1000);
    EXPECT_TRUE(events);
    for (const auto& e : *events) {
      if (e.job == job_id) out.push_back(e.kind);
    }
    return out;
  }
  static runner::ExitRecord exited(int code) {
    runner::ExitRecord r;
    r.exit_code = code;
    r.started_at_ms = 1;
    r.ended_at_ms = 2;
    return r;
  }

  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<FakeWorld> world_;
  gpu::Inventory inventory_;
  Config config_;
  std::unique_ptr<FakeHost> host_;
  std::unique_ptr<RunLifecycle> runs_;
};

}  // namespace gpuq::daemon::testing
