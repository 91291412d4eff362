// SPDX-License-Identifier: Apache-2.0
// Table-driven scheduler tests: a Case is a snapshot and what one pass must decide about it
// (who starts, who waits, on which slots, with which reason text). expect_case() runs the
// pass, checks the decision against the reference validity checker and then the table.
// Test-only, header-only (GoogleTest).
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "sched/test_support.h"

namespace gpuq::sched::testing {

struct Case {
  std::string name;
  Snapshot snapshot;
  std::vector<int64_t> started;                 // in start order
  std::vector<int64_t> waiting;                 // in scheduling order
  std::map<int64_t, std::vector<int>> slots{};  // started job -> slots (checked when given)
  std::map<int64_t, std::string> reasons{};     // waiting job -> reason text (when given)
};

inline Snapshot with_queue(Snapshot s, std::vector<PendingJob> queue) {
  s.queue = std::move(queue);
  return s;
}

inline void expect_case(const Case& c) {
  SCOPED_TRACE(c.name);
  Decision d = schedule(c.snapshot);
  EXPECT_EQ(check_decision(c.snapshot, d), "");
  EXPECT_EQ(started(d), c.started);
  EXPECT_EQ(waiting(d), c.waiting);
  for (const auto& [job, slots] : c.slots) EXPECT_EQ(slots_of(d, job), slots) << "job " << job;
  for (const auto& [job, text] : c.reasons) {
    EXPECT_EQ(text_of(d, c.snapshot, job), text) << "job " << job;
  }
}

}  // namespace gpuq::sched::testing
