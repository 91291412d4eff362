// SPDX-License-Identifier: Apache-2.0
// GPU choice: topology, memory and sharing, reservations.
#include <gtest/gtest.h>

#include "sched/case_table.h"

namespace gpuq::sched::testing {
namespace {

PendingJob mem_job(int64_t id, int gpus, int64_t mem, bool share = false) {
  PendingJob j = job(id, gpus).mem(mem);
  j.share = share;
  return j;
}
PendingJob reserved_job(int64_t id, int gpus, int r) { return job(id, gpus).reservation(r); }

// Four GPUs in NVLink pairs (0,1) and (2,3); `held` are busy.
Snapshot pairs(std::vector<int> held = {}) {
  Snapshot s = machine(4);
  s.links = {{0, 2, 0, 0}, {2, 0, 0, 0}, {0, 0, 0, 2}, {0, 0, 2, 0}};
  for (int slot : held) s.gpus[slot].held_exclusive = true;
  return s;
}

// Eight GPUs in two NVLink quads (0-3, 4-7), linked 4 inside a quad and 1 across.
Snapshot quads(std::vector<int> held = {}) {
  Snapshot s = machine(8);
  s.links.assign(8, std::vector<int>(8, 1));
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) s.links[a][b] = a == b ? 0 : (a / 4 == b / 4 ? 4 : 1);
  }
  for (int slot : held) s.gpus[slot].held_exclusive = true;
  return s;
}

TEST(Placement, Topology) {
  Snapshot triangle = machine(4);
  // Maximising the sum would take {0,1,2} (sum 20, but GPUs 1 and 2 unlinked); we maximise
  // the weakest link first, then the sum: {0,1,3} (min 3, sum 16) beats {0,2,3} on slots.
  triangle.links = {{0, 10, 10, 3}, {10, 0, 0, 3}, {10, 0, 0, 3}, {3, 3, 3, 0}};
  Snapshot one_sided = machine(4);
  one_sided.links = {{0, 2, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 2}};
  one_sided.gpus[0].held_exclusive = true;
  std::vector<Case> cases = {
      {"a 2-GPU job gets a pair", with_queue(pairs(), {job(1, 2)}), {1}, {}, {{1, {0, 1}}}},
      {"a 2-GPU job gets the whole pair",
       with_queue(pairs({0}), {job(1, 2)}),
       {1},
       {},
       {{1, {2, 3}}}},
      {"a 1-GPU job fills the half-used pair",
       with_queue(pairs({0}), {job(1, 1)}),
       {1},
       {},
       {{1, {1}}}},
      {"a 1-GPU job keeps the last whole pair whole",
       with_queue(pairs({2}), {job(1, 1)}),
       {1},
       {},
       {{1, {3}}}},
      {"1-GPU jobs fill pairs one after the other",
       with_queue(pairs(), {job(1, 1), job(2, 1), job(3, 1)}),
       {1, 2, 3},
       {},
       {{1, {0}}, {2, {1}}, {3, {2}}}},
      {"a 1-GPU job leaves a pair for the 2-GPU job after it",
       with_queue(pairs(), {job(1, 1), job(2, 2)}),
       {1, 2},
       {},
       {{1, {0}}, {2, {2, 3}}}},
      {"a 4-GPU job gets the free quad",
       with_queue(quads({1}), {job(1, 4)}),
       {1},
       {},
       {{1, {4, 5, 6, 7}}}},
      {"two 4-GPU jobs get a quad each",
       with_queue(quads(), {job(1, 4), job(2, 4)}),
       {1, 2},
       {},
       {{1, {0, 1, 2, 3}}, {2, {4, 5, 6, 7}}}},
      {"a 2-GPU job stays inside a quad",
       with_queue(quads({0, 1, 2}), {job(1, 2)}),
       {1},
       {},
       {{1, {4, 5}}}},
      {"the weakest link counts first",
       with_queue(triangle, {job(1, 3)}),
       {1},
       {},
       {{1, {0, 1, 3}}}},
      {"ties go to the lowest slots: a 5-GPU job takes a whole quad and GPU 4",
       with_queue(quads(), {job(1, 5)}),
       {1},
       {},
       {{1, {0, 1, 2, 3, 4}}}},
      {"links given on one side of the diagonal",
       with_queue(one_sided, {job(1, 1), job(2, 2)}),
       {1, 2},
       {},
       {{1, {1}}, {2, {2, 3}}}},
  };
  for (const Case& c : cases) expect_case(c);
}

// GPU 0 has 24000 MiB free, GPU 1 80000.
Snapshot uneven() {
  Snapshot s = machine(2);
  s.gpus[0].memory_total_mib = s.gpus[0].memory_free_mib = 24000;
  return s;
}

TEST(Placement, MemoryAndSharing) {
  Snapshot small = machine(2, 16000);
  Snapshot shared = machine(2);
  shared.running = {run(9).slots({0}).share(50000)};
  shared.gpus[0].sharers = 1;
  shared.gpus[0].memory_free_mib = 30000;
  Snapshot held_and_shared = machine(2);
  held_and_shared.gpus[0].held_exclusive = true;
  held_and_shared.gpus[1].sharers = 1;
  held_and_shared.gpus[1].memory_free_mib = 60000;
  // GPU 0 is shared with 50000 MiB left, GPU 1 with 30000, GPU 2 is whole.
  Snapshot two_shared = machine(3);
  two_shared.running = {run(8).slots({0}).share(30000), run(9).slots({1}).share(50000)};
  two_shared.gpus[0].sharers = two_shared.gpus[1].sharers = 1;
  two_shared.gpus[0].memory_free_mib = 50000;
  two_shared.gpus[1].memory_free_mib = 30000;
  std::vector<Case> cases = {
      {"a sharer packs onto the shared GPU with the least memory that fits it; a whole GPU "
       "only when no shared one has room",
       with_queue(two_shared, {mem_job(1, 1, 20000, true), mem_job(2, 1, 40000, true),
                               mem_job(3, 1, 20000, true)}),
       {1, 2, 3},
       {},
       {{1, {1}}, {2, {0}}, {3, {2}}}},
      {"gpu_mem picks a GPU with that much free",
       with_queue(uneven(), {mem_job(1, 1, 40000), mem_job(2, 1, 20000)}),
       {1, 2},
       {},
       {{1, {1}}, {2, {0}}}},
      {"no GPU has the memory",
       with_queue(small, {mem_job(1, 1, 20000), job(2, 1)}),
       {2},
       {1},
       {},
       {{1, "no GPU has 20000 MiB free"}}},
      {"too few GPUs have the memory",
       with_queue(uneven(), {mem_job(1, 2, 40000)}),
       {},
       {1},
       {},
       {{1, "needs 2 GPUs with 40000 MiB free, 1 has it"}}},
      {"sharing jobs pack while memory fits, counting this pass's starts",
       with_queue(machine(2), {mem_job(1, 1, 50000, true), mem_job(2, 1, 50000, true),
                               mem_job(3, 1, 20000, true), job(4, 1)}),
       {1, 2, 3},
       {4},
       {{1, {0}}, {2, {1}}, {3, {0}}},
       {{4, "needs 1 GPU, 0 free"}}},
      {"a sharing job joins running sharers while memory fits",
       with_queue(shared, {mem_job(1, 1, 20000, true), mem_job(2, 1, 40000, true)}),
       {1, 2},
       {},
       {{1, {0}}, {2, {1}}}},
      {"a held GPU takes nothing; a shared one only sharing jobs",
       with_queue(held_and_shared, {job(1, 1),
                                    [] {
                                      // Job 1 waits for a whole GPU, at no known time: a sharer may
                                      // run on its GPUs only for a known time.
                                      PendingJob j = mem_job(2, 1, 10000, true);
                                      j.estimate_ms = 600'000;
                                      return j;
                                    }()}),
       {2},
       {1},
       {{2, {1}}},
       {{1, "needs 1 GPU, 0 free"}}},
  };
  for (const Case& c : cases) expect_case(c);
}

TEST(Placement, Reservations) {
  Snapshot by_gpu = machine(4);
  by_gpu.reservations = {reservation("eval", {0, 1})};
  by_gpu.gpus[0].reservation = by_gpu.gpus[1].reservation = 0;
  Snapshot by_list = machine(4);
  by_list.reservations = {reservation("eval", {2, 3})};
  Snapshot only_reserved = machine(2);
  only_reserved.reservations = {reservation("eval", {0, 1})};
  // Reservation "a" lists GPU 0, but GPU 0 names reservation 1 ("b"): the GPU's word wins.
  Snapshot disagree = machine(2);
  disagree.reservations = {reservation("a", {0}), reservation("b", {})};
  disagree.gpus[0].reservation = 1;
  std::vector<Case> cases = {
      {"reserved GPUs take only their jobs, and those jobs run only there",
       with_queue(by_gpu, {reserved_job(1, 2, 0), job(2, 1), reserved_job(3, 1, 0)}),
       {1, 2},
       {3},
       {{1, {0, 1}}, {2, {2}}},
       {{3, "reserved GPUs 0,1 busy"}}},
      {"a reservation given by its slots only",
       with_queue(by_list, {job(1, 2), reserved_job(2, 1, 0)}),
       {1, 2},
       {},
       {{1, {0, 1}}, {2, {2}}}},
      {"jobs outside a reservation never take its GPUs",
       with_queue(only_reserved, {job(1, 1)}),
       {},
       {1},
       {},
       {{1, "needs 1 GPU, 0 free, only 0 usable"}}},
      {"a reservation that does not exist",
       with_queue(machine(1), {reserved_job(1, 1, 3), job(2, 1)}),
       {2},
       {1},
       {},
       {{1, "reservation #3 has no GPUs"}}},
      {"a reservation one past the last",
       with_queue(by_list, {reserved_job(1, 1, 1), job(2, 1)}),
       {2},
       {1},
       {{2, {0}}},
       {{1, "reservation #1 has no GPUs"}}},
      {"a GPU naming a reservation belongs to it, whatever another reservation lists",
       with_queue(disagree, {reserved_job(1, 1, 1), reserved_job(2, 1, 0), job(3, 1)}),
       {1, 3},
       {2},
       {{1, {0}}, {3, {1}}}},
  };
  for (const Case& c : cases) expect_case(c);
}

}  // namespace
}  // namespace gpuq::sched::testing
