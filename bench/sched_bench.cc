// SPDX-License-Identifier: Apache-2.0
// Google Benchmark: the cost of one scheduling pass (sched::schedule) over a deep queue on a
// big box: 64 GPUs in eight NVLink islands, half of them busy with running jobs that have
// expected ends, and N queued jobs with mixed GPU counts (1-8), priorities, estimates, some
// memory needs, some sharing and some lanes. The pass must stay well under 10 ms at
// N = 100,000 and grow no faster than N log N (reported with ->Complexity).
// BM_SchedulePassFairShare is the same queue shared by 16 users under fair share.
// BM_SchedulePassBackfillOneFree is backfill's worst case: every queued job checked and refused.
// Run: sched_bench [--benchmark_filter=...]; see scripts/bench.sh.
#include <benchmark/benchmark.h>

#include <random>

#include "sched/scheduler.h"

namespace {

using namespace gpuq::sched;

constexpr int kGpus = 64;
constexpr int64_t kNow = 1'700'000'000'000;
constexpr int64_t kMin = 60'000;

Snapshot make_snapshot(int queued, Policy policy) {
  std::mt19937_64 rng(42);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Snapshot s;
  s.now_ms = kNow;
  s.policy = policy;
  s.backfill_unknown_limit_ms = 30 * kMin;
  for (int i = 0; i < kGpus; ++i) {
    Gpu gpu;
    gpu.slot = i;
    gpu.memory_total_mib = gpu.memory_free_mib = 81920;
    s.gpus.push_back(gpu);
  }
  s.links.assign(kGpus, std::vector<int>(kGpus, 1));
  for (int a = 0; a < kGpus; ++a) {
    for (int b = 0; b < kGpus; ++b) s.links[a][b] = a == b ? 0 : (a / 8 == b / 8 ? 18 : 1);
  }
  Lane net;
  net.name = "net";
  net.capacity = 2;
  net.excludes = {"io"};
  Lane cpu;
  cpu.name = "cpu";
  cpu.capacity = 8;
  Lane io;
  io.name = "io";
  io.capacity = 4;
  s.lanes = {net, cpu, io};
  // Half the GPUs busy: jobs of 1, 2, 4 or 8 GPUs over slots 0..31, ending 10 min to 10 h.
  int slot = 0, id = 1'000'000;
  while (slot < kGpus / 2) {
    int width = std::min(1 << pick(0, 3), kGpus / 2 - slot);
    RunningJob run;
    run.id = id++;
    for (int i = 0; i < width; ++i) {
      run.slots.push_back(slot);
      s.gpus[slot++].held_exclusive = true;
    }
    run.expected_end_ms = kNow + pick(10, 600) * kMin;
    s.running.push_back(run);
  }
  s.queue.reserve(queued);
  for (int i = 0; i < queued; ++i) {
    PendingJob job;
    job.id = i + 1;
    static constexpr int kPriorities[] = {10, 50, 90};
    static constexpr int kWidths[] = {1, 1, 1, 2, 2, 4, 4, 8};
    job.priority = kPriorities[pick(0, 2)];
    job.queue_order = i;
    job.gpus = kWidths[pick(0, 7)];
    if (pick(0, 9) == 0) job.lanes = {pick(0, 2)};
    if (pick(0, 9) == 0) job.gpu_mem_mib = pick(1, 8) * 10240;
    if (job.gpus == 1 && pick(0, 19) == 0) job.share = true;
    if (pick(0, 9) < 8) job.estimate_ms = pick(5, 720) * kMin;
    s.queue.push_back(std::move(job));
  }
  return s;
}

void time_passes(benchmark::State& state, const Snapshot& snapshot) {
  size_t started = 0;
  for (auto _ : state) {
    Decision decision = schedule(snapshot);
    started = decision.starts.size();
    benchmark::DoNotOptimize(decision);
  }
  state.counters["started"] = static_cast<double>(started);
  state.SetComplexityN(state.range(0));
}

void run_pass(benchmark::State& state, Policy policy) {
  time_passes(state, make_snapshot(static_cast<int>(state.range(0)), policy));
}

void BM_SchedulePassBackfill(benchmark::State& state) { run_pass(state, Policy::kBackfill); }

// Backfill's worst case since no job past the reservation holds anything back (EASY): one
// GPU free, the head needs all 64, and every other job needs one for longer than the head
// waits, so each is checked against the profile and refused.
void BM_SchedulePassBackfillOneFree(benchmark::State& state) {
  Snapshot s = make_snapshot(0, Policy::kBackfill);
  for (int slot = kGpus / 2; slot < kGpus - 1; ++slot) {
    RunningJob run;
    run.id = 2'000'000 + slot;
    run.slots = {slot};
    s.gpus[slot].held_exclusive = true;
    run.expected_end_ms = kNow + 60 * kMin;
    s.running.push_back(run);
  }
  const int queued = static_cast<int>(state.range(0));
  for (int i = 0; i < queued; ++i) {
    PendingJob job;
    job.id = i + 1;
    job.queue_order = i;
    job.gpus = i == 0 ? kGpus : 1;
    job.estimate_ms = (i == 0 ? 60 : 600 + i % 100) * kMin;
    s.queue.push_back(job);
  }
  time_passes(state, s);
}
void BM_SchedulePassPriority(benchmark::State& state) { run_pass(state, Policy::kPriority); }

// Fair share between 16 users of unequal usage (docs/lab.md): each priority is ordered by
// users rather than by queue order alone, so the pass builds its order every time.
void BM_SchedulePassFairShare(benchmark::State& state) {
  Snapshot s = make_snapshot(static_cast<int>(state.range(0)), Policy::kBackfill);
  s.fair_share = true;
  constexpr int kUsers = 16;
  for (int u = 0; u < kUsers; ++u) {
    Owner owner;
    owner.usage_gpu_ms = u * 3'600'000.0;
    s.owners.push_back(owner);
  }
  for (PendingJob& job : s.queue) job.owner = static_cast<int>(job.id % kUsers);
  time_passes(state, s);
}

BENCHMARK(BM_SchedulePassBackfill)
    ->RangeMultiplier(10)
    ->Range(1'000, 100'000)
    ->Unit(benchmark::kMillisecond)
    ->Complexity(benchmark::oNLogN);
BENCHMARK(BM_SchedulePassBackfillOneFree)
    ->RangeMultiplier(10)
    ->Range(1'000, 100'000)
    ->Unit(benchmark::kMillisecond)
    ->Complexity(benchmark::oNLogN);
BENCHMARK(BM_SchedulePassFairShare)
    ->RangeMultiplier(10)
    ->Range(1'000, 100'000)
    ->Unit(benchmark::kMillisecond)
    ->Complexity(benchmark::oNLogN);
BENCHMARK(BM_SchedulePassPriority)
    ->RangeMultiplier(10)
    ->Range(1'000, 100'000)
    ->Unit(benchmark::kMillisecond)
    ->Complexity(benchmark::oNLogN);

}  // namespace
