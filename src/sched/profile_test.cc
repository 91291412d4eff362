// SPDX-License-Identifier: Apache-2.0
// The time profile behind backfill (backfill.h), asked directly at its boundaries: memory
// exactly enough versus one MiB short, over windows where sharers come and go; lane units at
// a window's edges, with units that no running job names; and where the search for a start
// begins. The scheduler's tests see these only through the starts they allow.
#include <gtest/gtest.h>

#include "sched/backfill.h"
#include "sched/test_support.h"

namespace gpuq::sched::testing {
namespace {

constexpr int64_t kNow = 7'000'000;
constexpr int64_t kMin = 60'000;

// Whether `job` fits over [now + from, now + to) on every GPU of the snapshot.
bool fits(const Snapshot& s, const PendingJob& job, int64_t from, int64_t to) {
  Machine machine(s);
  Profile profile(machine, s);
  GpuSet all;
  for (int g = 0; g < machine.gpu_count(); ++g) all.set(g);
  return profile.fits(machine.need_of(job), kNow + from, kNow + to, all, nullptr);
}

// A machine without GPUs whose lane cpu has `capacity` units, `used` of them in use; job 5
// holds one of them for an hour when `job5` (the others no running job names).
Snapshot cpu_lane(int capacity, int used, bool job5 = true) {
  Snapshot s = machine(0);
  s.now_ms = kNow;
  s.lanes = {lane("cpu", capacity)};
  s.lanes[0].used = used;
  if (job5) s.running = {run(5).lanes({0}).ends(kNow + 60 * kMin)};
  return s;
}

TEST(Profile, MemoryFitsExactlyWhatTheSharersLeave) {
  const Snapshot s = shared_by_two(kNow);  // 10000 MiB free now, 40000 after an hour
  auto sharer = [](int64_t mib) { return job(1, 1).share().mem(mib); };
  EXPECT_TRUE(fits(s, sharer(10000), 0, 30 * kMin));
  EXPECT_FALSE(fits(s, sharer(10001), 0, 30 * kMin));
  EXPECT_TRUE(fits(s, sharer(40000), 60 * kMin, 90 * kMin));  // after job 100
  EXPECT_FALSE(fits(s, sharer(40001), 60 * kMin, 90 * kMin));
  EXPECT_FALSE(fits(s, sharer(20001), 59 * kMin, 90 * kMin));  // job 100 still there at 59
  EXPECT_TRUE(fits(s, sharer(80000), 120 * kMin, 150 * kMin));
  EXPECT_FALSE(fits(s, sharer(80001), 120 * kMin, 150 * kMin));
  // A job that does not share needs the GPU whole: only once both sharers have ended.
  EXPECT_FALSE(fits(s, job(1, 1).mem(1), 60 * kMin, 90 * kMin));
  EXPECT_TRUE(fits(s, job(1, 1).mem(80000), 120 * kMin, 150 * kMin));
}

TEST(Profile, ALaneUnitIsFreeFromTheMomentItsHolderEnds) {
  const Snapshot s = cpu_lane(1, 1);
  const PendingJob on_cpu = job(1, 0).lanes({0});
  EXPECT_FALSE(fits(s, on_cpu, 0, 30 * kMin));
  EXPECT_FALSE(fits(s, on_cpu, 59 * kMin, 90 * kMin));
  EXPECT_TRUE(fits(s, on_cpu, 60 * kMin, 90 * kMin));

  // A better job's reservation takes the unit from 90 minutes: a window ending exactly then
  // fits, one a millisecond longer does not.
  Machine machine(s);
  Profile profile(machine, s);
  Claim reserved;
  reserved.job = 2;
  reserved.start = kNow + 90 * kMin;
  reserved.end = kNow + 120 * kMin;
  reserved.tokens = token_bit(0);
  reserved.reserved = true;
  profile.add(reserved);
  const Need need = machine.need_of(on_cpu);
  EXPECT_TRUE(profile.fits(need, kNow + 60 * kMin, kNow + 90 * kMin, GpuSet{}, nullptr));
  EXPECT_FALSE(profile.fits(need, kNow + 60 * kMin, kNow + 90 * kMin + 1, GpuSet{}, nullptr));
  EXPECT_TRUE(profile.fits(need, kNow + 120 * kMin, kNow + 150 * kMin, GpuSet{}, nullptr));
}

TEST(Profile, UnitsNoRunningJobNamesAreHeldForever) {
  const PendingJob on_cpu = job(1, 0).lanes({0});
  // Two of two units are in use, but only job 5 says it holds one: full until it ends.
  EXPECT_FALSE(fits(cpu_lane(2, 2), on_cpu, 0, 30 * kMin));
  EXPECT_TRUE(fits(cpu_lane(2, 2), on_cpu, 60 * kMin, 90 * kMin));
  // One unit, held by nobody known: never free.
  EXPECT_FALSE(fits(cpu_lane(1, 1, false), on_cpu, 1000 * kMin, 1030 * kMin));
}

TEST(Profile, TheEarliestStartIsStrictlyAfterTheGivenTime) {
  // GPU 0 frees in an hour, GPU 1 in two.
  Snapshot s = machine(2);
  s.now_ms = kNow;
  s.running = {run(100).slots({0}).ends(kNow + 60 * kMin),
               run(101).slots({1}).ends(kNow + 120 * kMin)};
  s.gpus[0].held_exclusive = s.gpus[1].held_exclusive = true;
  Machine machine(s);
  Profile profile(machine, s);
  const Need one = machine.need_of(job(1, 1).estimate(30 * kMin));
  const Need two = machine.need_of(job(2, 2).estimate(30 * kMin));
  const GpuSet all = machine.could_ever_take(one);
  EXPECT_EQ(profile.earliest_after(one, kNow, all).start, kNow + 60 * kMin);
  EXPECT_EQ(profile.earliest_after(one, kNow + 60 * kMin - 1, all).start, kNow + 60 * kMin);
  EXPECT_EQ(profile.earliest_after(one, kNow + 60 * kMin, all).start, kNow + 120 * kMin);
  EXPECT_EQ(profile.earliest_after(two, kNow, all).start, kNow + 120 * kMin);
  EXPECT_EQ(profile.earliest_after(two, kNow + 120 * kMin, all).start, kInfinity);
}

// A reservation index is valid below the number of reservations (or of those GPUs name): one
// past the last is a reservation without GPUs (pool -1), never a pool out of range.
TEST(Machine, AReservationPastTheLastHasNoPool) {
  Snapshot s = machine(2);
  s.reservations = {reservation("eval", {1})};
  Machine machine_of(s);
  EXPECT_EQ(machine_of.need_of(job(1, 1).reservation(0)).pool, 1);
  EXPECT_EQ(machine_of.need_of(job(1, 1).reservation(1)).pool, -1);
  s.gpus[0].reservation = 1;  // a GPU naming reservation 1 makes it exist
  Machine named(s);
  EXPECT_EQ(named.need_of(job(1, 1).reservation(1)).pool, 2);
  EXPECT_EQ(named.need_of(job(1, 1).reservation(2)).pool, -1);
}

}  // namespace
}  // namespace gpuq::sched::testing
