// SPDX-License-Identifier: Apache-2.0
// What a scheduling pass over a deep queue costs, counted rather than timed: the bytes it
// allocates. A pass that allocates in proportion to every queued job (its waits, an order of
// the queue) faults all of that memory in again each time, since glibc maps blocks that big
// afresh: at 100,000 queued jobs that made the pass after a release cost 100-300 ms on a
// virtual machine, where the one after a hold, served from memory already mapped, cost 3-12
// ms. This test binary counts every allocation through a replaced global operator new (its own
// binary, so that no other test pays for it).
#include <atomic>
#include <cstdlib>
#include <new>

#include "daemon/queue_test_support.h"

namespace {

std::atomic<bool> counting{false};
std::atomic<int64_t> allocated{0};

}  // namespace

// GCC sees free() of what operator new returned; here operator new is malloc.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t size) {
  if (counting.load(std::memory_order_relaxed)) allocated.fetch_add(static_cast<int64_t>(size), std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return ::operator new(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace gpuq::daemon {
namespace {

constexpr int kQueued = 20'000;

class PassCost : public testing::QueueTest {
 protected:
  // A drained daemon with kQueued ready jobs, `held` held ones and `dependents` that wait for
  // the held job "gate".
  void queue_jobs(int held, int dependents) {
    start("fake:8");
    ASSERT_TRUE(queue_->set_draining(true));
    PlanRequest plan;
    auto job = [](const std::string& name, int i) {
      JobSpec spec = command("true", 1 + i % 8);
      spec.name = name;
      spec.priority = 10 + i % 80;
      spec.estimate_ms = 60'000 + (i % 100) * 1000;
      return spec;
    };
    for (int i = 0; i < kQueued; ++i) plan.jobs.push_back(job("q" + std::to_string(i), i));
    plan.jobs.push_back(job("gate", 0));
    plan.jobs.back().hold = true;
    for (int i = 0; i < held; ++i) {
      plan.jobs.push_back(job("h" + std::to_string(i), i));
      plan.jobs.back().hold = true;
    }
    for (int i = 0; i < dependents; ++i) {
      plan.jobs.push_back(job("d" + std::to_string(i), i));
      plan.jobs.back().deps.push_back({Dependency::Kind::kAfterAny, "gate", 0});
    }
    auto outcome = queue_->submit_plan(std::move(plan));
    ASSERT_TRUE(outcome) << outcome.error().message;
    for (const auto& entry : outcome->jobs) ids_[entry.name] = entry.id;
    world_->run();
    // Two passes, so that the pass's buffers of the queue's size exist and can be reused.
    for (int i = 0; i < 2; ++i) change([&] { ASSERT_TRUE(queue_->hold(ids_["q1"])); },
                                       [&] { ASSERT_TRUE(queue_->release(ids_["q1"])); });
  }
  // Bytes allocated by `what` and the pass that follows it.
  int64_t bytes_of(const std::function<void()>& what) {
    int64_t pass = queue_->waits()->pass;
    allocated = 0;
    counting = true;
    what();
    world_->run();
    counting = false;
    EXPECT_GT(queue_->waits()->pass, pass) << "no pass ran";
    return allocated;
  }
  void change(const std::function<void()>& a, const std::function<void()>& b) {
    bytes_of(a);
    bytes_of(b);
  }
  // What a pass may allocate: a little per job whose readiness changed, nothing per queued job
  // (the jobs' own vectors, the store's rows and the events are a few KiB at most).
  static int64_t budget(int changed, int started = 0) {
    return 64 * 1024 + 2048 * changed + 32 * 1024 * started;  // a start loads its job, writes its run
  }

  std::map<std::string, int64_t> ids_;
};

TEST_F(PassCost, AHoldAndAReleaseAllocateNothingPerQueuedJob) {
  queue_jobs(0, 0);
  // Each allocation of the queue's size (a wait per job: 72 bytes) would be over 1 MiB here.
  EXPECT_LT(bytes_of([&] { ASSERT_TRUE(queue_->hold(ids_["q0"])); }), budget(1));
  EXPECT_LT(bytes_of([&] { ASSERT_TRUE(queue_->release(ids_["q0"])); }), budget(1));
  EXPECT_LT(bytes_of([&] { ASSERT_TRUE(queue_->hold(ids_["q0"])); }), budget(1));
  EXPECT_LT(bytes_of([&] { ASSERT_TRUE(queue_->release(ids_["q0"])); }), budget(1));
}

TEST_F(PassCost, ReleasesOfManyHeldJobsAllocateNothingPerQueuedJob) {
  queue_jobs(200, 0);
  for (int i = 0; i < 200; ++i) {
    ASSERT_LT(bytes_of([&] { ASSERT_TRUE(queue_->release(ids_["h" + std::to_string(i)])); }), budget(1))
        << "release " << i;
  }
  EXPECT_EQ(queue_->waits()->waits.size(), static_cast<size_t>(kQueued + 200));
}

TEST_F(PassCost, ADependencyThatMakesManyReadyAllocatesPerChangedJobOnly) {
  queue_jobs(0, 500);
  EXPECT_LT(bytes_of([&] { ASSERT_TRUE(queue_->cancel(ids_["gate"])); }), budget(500));
  EXPECT_EQ(queue_->waits()->waits.size(), static_cast<size_t>(kQueued + 500));
  EXPECT_LT(bytes_of([&] { ASSERT_TRUE(queue_->hold(ids_["d0"])); }), budget(1));
}

TEST_F(PassCost, AnUndrainedPassAllocatesNothingPerQueuedJob) {
  queue_jobs(0, 0);
  // Undrain: the pass starts what fits on the 8 GPUs (at most 8 jobs), and every other job
  // gets its reason.
  EXPECT_LT(bytes_of([&] { ASSERT_TRUE(queue_->set_draining(false)); }), budget(8, 8));
  EXPECT_LT(bytes_of([&] { ASSERT_TRUE(queue_->hold(ids_["q100"])); }), budget(1));
  EXPECT_LT(bytes_of([&] { ASSERT_TRUE(queue_->release(ids_["q100"])); }), budget(1));
}

}  // namespace
}  // namespace gpuq::daemon
