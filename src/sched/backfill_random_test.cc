// SPDX-License-Identifier: Apache-2.0
// Randomised backfill checks against the reference simulator (test_support.h).
//
// Each case is a small random machine (1-6 GPUs with memory, topology, an occasional
// reservation and unusable GPU, up to two lanes with exclusions), some running jobs with
// expected ends, and up to 8 queued jobs with estimates or timeouts (and, when the unknown
// limit is 0, some of unknown length). Jobs run exactly as long as the scheduler is told, and
// work of unknown length never ends, as the scheduler assumes: that is the model under which
// "never delays" is a promise (scheduler.h says what happens when ends come earlier).
// We simulate the queue to the end under kBackfill (with a random reservation cap), kPriority
// and kFifo, and check:
//  (a) every pass of every simulation decides only valid starts (check_decision);
//  (b) the best waiting job — the first job in priority order that the first pass does not
//      start — starts under kBackfill exactly when it starts under kPriority: backfilling
//      never delays it (and cannot start it earlier, as nothing ends earlier);
//  (c) when the first pass says that job "needs N GPUs ... next free in ~T", it starts
//      exactly T later under either policy: the profile's reservation is exact.
// Seeds are fixed; the cases run in well under two seconds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <random>

#include "sched/test_support.h"

namespace gpuq::sched::testing {
namespace {

constexpr int64_t kNow = 50'000'000;
constexpr int64_t kUnit = 60'000;

struct RandomCase {
  Snapshot snapshot;
  std::map<int64_t, int64_t> duration;
};

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  RandomCase next() {
    RandomCase c;
    Snapshot& s = c.snapshot;
    s.now_ms = kNow;
    const int gpus = pick(1, 6);
    add_gpus(s, gpus);
    add_lanes(s);
    add_running(s);
    const bool unknown_allowed = chance(2);
    s.backfill_unknown_limit_ms = unknown_allowed ? 0 : pick(1, 30) * kUnit;
    const int jobs = pick(1, 8);
    for (int id = 1; id <= jobs; ++id) {
      JobBuilder j = job(id, pick(0, 5) == 0 ? 0 : pick(1, std::min(gpus, 3)));
      j.priority(std::array<int, 3>{10, 50, 90}[pick(0, 2)]).order(id);
      std::vector<int> lanes;
      for (int l = 0; l < static_cast<int>(s.lanes.size()); ++l) {
        if (chance(3)) lanes.push_back(l);
      }
      j.lanes(lanes);
      if (chance(5)) j.mem(pick(1, 7) * 10000);
      if (chance(6)) j.share();
      if (!s.reservations.empty() && chance(5)) j.reservation(0);
      int64_t length = pick(1, 30) * kUnit;
      const int kind = pick(0, 9);
      if (kind < 7) {
        j.estimate(length);
      } else if (kind < 9 || !unknown_allowed) {
        j.timeout(length);
      } else {
        length = kForever;  // what the scheduler assumes of work of unknown length
      }
      c.duration[id] = length;
      s.queue.push_back(j);
    }
    s.max_reservations = std::array<int, 4>{0, 1, 2, 32}[pick(0, 3)];
    return c;
  }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(int one_in) { return pick(1, one_in) == 1; }

  void add_gpus(Snapshot& s, int gpus) {
    for (int i = 0; i < gpus; ++i) {
      Gpu g;
      g.slot = i;
      g.memory_total_mib = g.memory_free_mib = chance(4) ? 40000 : 80000;
      g.usable = !chance(10);
      s.gpus.push_back(g);
    }
    if (chance(2)) {
      s.links.assign(gpus, std::vector<int>(gpus, 0));
      for (int a = 0; a < gpus; ++a) {
        for (int b = a + 1; b < gpus; ++b) s.links[a][b] = s.links[b][a] = pick(0, 3);
      }
    }
    if (gpus >= 2 && chance(6)) {
      s.reservations = {reservation("eval", {gpus - 1})};
      if (chance(2)) s.gpus[gpus - 2].reservation = 0;
    }
  }

  void add_lanes(Snapshot& s) {
    const int count = pick(0, 2);
    using Names = std::vector<std::string>;
    if (count >= 1) s.lanes.push_back(lane("net", pick(1, 2), chance(2) ? Names{"gpu"} : Names{}));
    if (count >= 2) s.lanes.push_back(lane("cpu", pick(1, 2), chance(3) ? Names{"net"} : Names{}));
  }

  // Running jobs ending 1-30 units from now, on free GPUs and lane units.
  void add_running(Snapshot& s) {
    std::vector<int> held(s.gpus.size(), 0), shared(s.gpus.size(), 0);
    std::vector<int> used(s.lanes.size(), 0);
    const int count = pick(0, 3);
    for (int i = 0; i < count; ++i) {
      RunBuilder r = run(100 + i);
      const bool share = chance(5);
      if (share) r.share(pick(1, 4) * 10000);
      std::vector<int> slots;
      const int want = pick(0, 2);
      for (size_t g = 0; g < s.gpus.size() && static_cast<int>(slots.size()) < want; ++g) {
        if (held[g] || (!share && shared[g]) || chance(3)) continue;
        slots.push_back(static_cast<int>(g));
        (share ? shared[g] : held[g]) = 1;
      }
      r.slots(slots);
      for (size_t l = 0; l < s.lanes.size(); ++l) {
        if (chance(3) && used[l] < s.lanes[l].capacity) {
          ++used[l];
          r.lanes({static_cast<int>(l)});
          break;
        }
      }
      r.ends(kNow + pick(1, 30) * kUnit);
      s.running.push_back(r);
    }
  }

  std::mt19937_64 rng_;
};

int64_t start_or_never(const SimResult& r, int64_t id) {
  auto it = r.start.find(id);
  return it == r.start.end() ? INT64_MAX : it->second;
}

TEST(BackfillRandom, NeverDelaysTheBestWaitingJobAndEveryStartIsValid) {
  // GPUQ_SCHED_SOAK=<cases> runs more cases from a random seed (or GPUQ_SCHED_SEED), to soak.
  const char* soak = std::getenv("GPUQ_SCHED_SOAK");
  const int cases = soak ? std::atoi(soak) : 3000;
  const char* fixed = std::getenv("GPUQ_SCHED_SEED");
  const uint64_t seed = fixed  ? std::strtoull(fixed, nullptr, 10)
                        : soak ? std::random_device{}()
                               : 20240611;
  std::cout << "seed " << seed << "\n";
  Generator generator(seed);
  int compared = 0, predicted = 0, backfilled = 0;
  for (int i = 0; i < cases; ++i) {
    RandomCase c = generator.next();
    SCOPED_TRACE("case " + std::to_string(i) + "\n" + describe(c.snapshot));
    Snapshot backfill = c.snapshot, priority = c.snapshot, fifo = c.snapshot;
    priority.policy = Policy::kPriority;
    fifo.policy = Policy::kFifo;
    SimResult b = simulate(backfill, c.duration);
    SimResult p = simulate(priority, c.duration);
    SimResult f = simulate(fifo, c.duration);
    ASSERT_EQ(b.error, "");
    ASSERT_EQ(p.error, "");
    ASSERT_EQ(f.error, "");

    std::vector<PendingJob> order = c.snapshot.queue;
    sort_queue(order);
    const Decision& first = p.passes.at(0);
    auto head = std::find_if(order.begin(), order.end(), [&](const PendingJob& j) {
      return reason_of(first, j.id) != nullptr;
    });
    if (head == order.end()) continue;
    ++compared;
    EXPECT_EQ(start_or_never(b, head->id), start_or_never(p, head->id)) << "job " << head->id;
    for (const SimResult* r : {&b, &p}) {
      const WaitReason* why = reason_of(r->passes.at(0), head->id);
      ASSERT_NE(why, nullptr);
      if (why->kind == WaitReason::Kind::kNeedsGpus && why->next_free_in_ms >= 0) {
        ++predicted;
        EXPECT_EQ(start_or_never(*r, head->id), kNow + why->next_free_in_ms) << "job " << head->id;
      }
    }
    for (const auto& [id, at] : b.start) backfilled += at < start_or_never(p, id);
  }
  // The properties above must not hold vacuously.
  EXPECT_GT(compared, cases / 3);
  EXPECT_GT(predicted, cases / 10);
  EXPECT_GT(backfilled, cases / 20);
  std::cout << compared << " cases compared, " << predicted << " start predictions checked, "
            << backfilled << " jobs started earlier by backfill\n";
}

// Snapshot::reasons = false (the simulator's passes) leaves out the waits and the searches
// that serve only them, and nothing else: the same starts on the same slots, and the same
// latest reserved start, under every policy and cap.
TEST(BackfillRandom, DecisionsWithoutReasonsAreTheSame) {
  Generator generator(20260512);
  int started = 0;
  for (int i = 0; i < 3000; ++i) {
    RandomCase c = generator.next();
    SCOPED_TRACE("case " + std::to_string(i) + "\n" + describe(c.snapshot));
    for (Policy policy : {Policy::kBackfill, Policy::kPriority, Policy::kFifo}) {
      Snapshot with = c.snapshot;
      with.policy = policy;
      with.draining = i % 50 == 0;
      Snapshot without = with;
      without.reasons = false;
      const Decision a = schedule(with), b = schedule(without);
      ASSERT_EQ(b.starts.size(), a.starts.size());
      for (size_t k = 0; k < a.starts.size(); ++k) {
        EXPECT_EQ(b.starts[k].job_id, a.starts[k].job_id);
        EXPECT_EQ(b.starts[k].slots, a.starts[k].slots);
      }
      EXPECT_EQ(b.latest_reserved_start_ms, a.latest_reserved_start_ms);
      EXPECT_TRUE(b.waits.empty());
      started += static_cast<int>(a.starts.size());
    }
  }
  EXPECT_GT(started, 3000);  // not vacuous
}

}  // namespace
}  // namespace gpuq::sched::testing
