#include "sched/scheduler.h"

#include <gtest/gtest.h>

namespace gpuq::sched {
namespace {

PendingJob pj(int64_t id, int priority, int64_t order, int gpus) {
  PendingJob job;
  job.id = id;
  job.priority = priority;
  job.queue_order = order;
  job.gpus = gpus;
  return job;
}

struct Case {
  const char* name;
  std::vector<int> free_gpus;
  std::vector<PendingJob> queue;  // {id, priority, order, gpus}
  std::vector<int64_t> started;   // job ids started, in order
  std::vector<int64_t> waiting;   // job ids left waiting
};

std::vector<Case> cases() {
  return {
      {"fifo within a priority", {0, 1}, {pj(1, 50, 1, 1), pj(2, 50, 2, 1), pj(3, 50, 3, 1)}, {1, 2}, {3}},
      {"priority before fifo", {0}, {pj(1, 50, 1, 1), pj(2, 10, 2, 1)}, {2}, {1}},
      {"big job claims the free gpu", {0}, {pj(1, 50, 1, 2), pj(2, 50, 2, 1)}, {}, {1, 2}},
      {"zero-gpu jobs never wait for gpus", {}, {pj(1, 50, 1, 1), pj(2, 90, 2, 0)}, {2}, {1}},
      {"exact fit", {0, 1, 2}, {pj(1, 50, 1, 3), pj(2, 50, 2, 1)}, {1}, {2}},
      {"nothing free", {}, {pj(1, 50, 1, 1)}, {}, {1}},
      {"empty queue", {0, 1}, {}, {}, {}},
  };
}

TEST(Schedule, TableOfCases) {
  for (Case c : cases()) {
    Snapshot s;
    for (int slot : c.free_gpus) s.gpus.push_back(Gpu{slot, true, 0, 0, false, 0, -1});
    s.queue = c.queue;
    Decision d = schedule(s);
    std::vector<int64_t> started, waiting;
    for (const auto& st : d.starts) started.push_back(st.job_id);
    for (const auto& w : d.waits) waiting.push_back(w.job_id);
    EXPECT_EQ(started, c.started) << c.name;
    EXPECT_EQ(waiting, c.waiting) << c.name;
  }
}

TEST(Schedule, StartsGetDisjointSlots) {
  Snapshot s;
  for (int slot : {3, 1, 0, 2}) s.gpus.push_back(Gpu{slot, true, 0, 0, false, 0, -1});
  s.queue = {pj(1, 50, 1, 2), pj(2, 50, 2, 1), pj(3, 50, 3, 1)};
  Decision d = schedule(s);
  ASSERT_EQ(d.starts.size(), 3u);
  EXPECT_EQ(d.starts[0].slots, (std::vector<int>{3, 1}));
  EXPECT_EQ(d.starts[1].slots, (std::vector<int>{0}));
  EXPECT_EQ(d.starts[2].slots, (std::vector<int>{2}));
}

TEST(Schedule, ReasonsSayWhatIsMissing) {
  Snapshot s;
  s.gpus = {Gpu{0, true, 0, 0, true, 0, -1}, Gpu{1, true, 0, 0, false, 0, -1}};
  s.queue = {pj(1, 50, 1, 2), pj(2, 50, 2, 1)};
  Decision d = schedule(s);
  ASSERT_EQ(d.waits.size(), 2u);
  EXPECT_EQ(d.waits[0].reason.text(s), "needs 2 GPUs, 1 free");
  EXPECT_EQ(d.waits[1].reason.text(s), "behind 1 better job waiting for GPUs (needs 1)");
}

TEST(Schedule, DrainingStartsNothing) {
  Snapshot s;
  s.gpus = {Gpu{0, true, 0, 0, false, 0, -1}};
  s.queue = {pj(1, 50, 1, 0)};
  s.draining = true;
  Decision d = schedule(s);
  EXPECT_TRUE(d.starts.empty());
  ASSERT_EQ(d.waits.size(), 1u);
  EXPECT_NE(d.waits[0].reason.text(s).find("draining"), std::string::npos);
}

TEST(SortQueue, PriorityThenOrder) {
  std::vector<PendingJob> q = {pj(1, 90, 1, 0), pj(2, 10, 5, 0), pj(3, 10, 2, 0), pj(4, 50, 0, 0)};
  sort_queue(q);
  EXPECT_EQ(q[0].id, 3);
  EXPECT_EQ(q[1].id, 2);
  EXPECT_EQ(q[2].id, 4);
  EXPECT_EQ(q[3].id, 1);
}

}  // namespace
}  // namespace gpuq::sched
