// SPDX-License-Identifier: Apache-2.0
#include "runner/session_sweep.h"

#include <csignal>
#include <gtest/gtest.h>

namespace gpuq::runner {
namespace {

constexpr pid_t kShim = 500;
constexpr uint64_t kShimTicks = 1000;

// A process in session `sid` that started at `ticks`.
void add_member(os::FakeProcessTable& table, pid_t pid, pid_t sid, uint64_t ticks) {
  os::FakeProcessTable::Process p;
  p.facts = os::ProcessFacts{pid, 1, ticks, 1000, false, sid};
  table.add(std::move(p));
}

TEST(SessionSweep, KillsEveryMemberThatStartedWithTheRun) {
  os::FakeProcessTable table;
  add_member(table, 600, kShim, kShimTicks + 5);
  add_member(table, 601, kShim, kShimTicks);  // started in the shim's very tick: still the run's
  add_member(table, 700, 42, kShimTicks + 5);  // another session
  auto round = sweep_session_once(table, kShim, kShimTicks);
  EXPECT_EQ(round.signalled, 2);
  EXPECT_FALSE(round.done);
  EXPECT_EQ(table.signals_to(600), std::vector<int>{SIGKILL});
  EXPECT_EQ(table.signals_to(601), std::vector<int>{SIGKILL});
  EXPECT_TRUE(table.signals_to(700).empty());
  EXPECT_TRUE(sweep_session_once(table, kShim, kShimTicks).done);
}

TEST(SessionSweep, NeverTouchesAMemberOlderThanTheShim) {
  os::FakeProcessTable table;
  add_member(table, 600, kShim, kShimTicks - 1);
  auto round = sweep_session_once(table, kShim, kShimTicks);
  EXPECT_EQ(round.signalled, 0);
  EXPECT_TRUE(round.done);
  EXPECT_TRUE(table.signals_to(600).empty());
}

TEST(SessionSweep, AReusedLeaderPidMeansTheSessionIsSomeoneElses) {
  os::FakeProcessTable table;
  // The shim's pid now belongs to a new session leader (a later run's shim) and its child.
  add_member(table, kShim, kShim, kShimTicks + 900);
  add_member(table, 601, kShim, kShimTicks + 950);
  auto round = sweep_session_once(table, kShim, kShimTicks);
  EXPECT_TRUE(round.done);
  EXPECT_EQ(round.signalled, 0);
  EXPECT_TRUE(table.sent().empty());
}

TEST(SessionSweep, ALeaderReusedWhileListingStopsTheRound) {
  os::FakeProcessTable table;
  add_member(table, 601, kShim, kShimTicks + 5);
  int facts_reads = 0;
  table.on_facts = [&](pid_t pid) {
    // After the listing read the member, a new process takes the shim's pid.
    if (pid == 601 && ++facts_reads == 1) add_member(table, kShim, kShim, kShimTicks + 900);
  };
  auto round = sweep_session_once(table, kShim, kShimTicks);
  EXPECT_TRUE(round.done);
  EXPECT_TRUE(table.sent().empty());
}

TEST(SessionSweep, SignalsCheckTheStartTimeOfEachMember) {
  os::FakeProcessTable table;
  add_member(table, 600, kShim, kShimTicks + 5);
  // Between the listing and the signal, pid 600 exits and is reused by an unrelated process.
  table.on_signal = [&](pid_t pid) {
    if (pid == 600) add_member(table, 600, 77, kShimTicks + 10);
  };
  auto round = sweep_session_once(table, kShim, kShimTicks);
  EXPECT_EQ(round.signalled, 0);
  EXPECT_TRUE(table.find(600) != nullptr) << "the new process with the reused pid lives";
}

}  // namespace
}  // namespace gpuq::runner
