// SPDX-License-Identifier: Apache-2.0
#include "runner/ownership.h"

#include <gtest/gtest.h>

namespace gpuq::runner {
namespace {

class OwnershipTest : public ::testing::Test {
 protected:
  OwnershipTest() {
    table_.add(1, 0, 1, 0, "");
    table_.add(300, 1, 900, 1000, "");           // run 12's shim
    table_.add(301, 300, 910, 1000, "12-1-aa");  // its job
    table_.add(302, 301, 920, 1000, "");         // a child that dropped its environment
    table_.add(303, 302, 930, 1000, "");         // and its grandchild
    table_.add(400, 1, 950, 1000, "13-1-bb");    // an escaped daemon of run 13 (setsid, ppid 1)
    table_.add(500, 1, 990, 1000, "");           // somebody else's python
    runs_ = {LiveRunMarker{12, "12-1-aa", 300, 900}, LiveRunMarker{13, "13-1-bb", 350, 940}};
  }
  os::FakeProcessTable table_;
  std::vector<LiveRunMarker> runs_;
};

TEST_F(OwnershipTest, MarkerNamesTheRun) {
  EXPECT_EQ(owning_job(table_, 301, runs_), 12);
  EXPECT_EQ(owning_job(table_, 400, runs_), 13);  // no shim above it: the marker suffices
}

TEST_F(OwnershipTest, AncestryUpToTheShimNamesTheRun) {
  EXPECT_EQ(owning_job(table_, 302, runs_), 12);
  EXPECT_EQ(owning_job(table_, 303, runs_), 12);
  EXPECT_EQ(owning_job(table_, 300, runs_), 12);  // the shim itself
}

TEST_F(OwnershipTest, ReusedShimPidIsNotTheRun) {
  // Run 12's shim is gone and pid 300 now belongs to another process.
  table_.add(300, 1, 980, 1000, "");
  EXPECT_EQ(owning_job(table_, 302, runs_), std::nullopt);
  EXPECT_EQ(owning_job(table_, 301, runs_), 12);  // still marked
}

TEST_F(OwnershipTest, UnknownOrUnrelatedPidIsForeign) {
  EXPECT_EQ(owning_job(table_, 500, runs_), std::nullopt);
  EXPECT_EQ(owning_job(table_, 777, runs_), std::nullopt);
  EXPECT_EQ(owning_job(table_, 1, runs_), std::nullopt);
  EXPECT_EQ(owning_job(table_, 301, {}), std::nullopt);
  // A marker of a run that is no longer live.
  table_.add(600, 1, 995, 1000, "11-1-old");
  EXPECT_EQ(owning_job(table_, 600, runs_), std::nullopt);
}

TEST_F(OwnershipTest, AncestryWalkStopsOnACycleOrAfter64Steps) {
  table_.add(700, 700, 999, 1000, "");  // its own parent (cannot happen; must not loop)
  EXPECT_EQ(owning_job(table_, 700, runs_), std::nullopt);
  // A chain of 70 processes under the shim: the shim is too far up.
  pid_t parent = 300;
  for (pid_t pid = 1000; pid < 1070; ++pid) {
    table_.add(pid, parent, 1000, 1000, "");
    parent = pid;
  }
  EXPECT_EQ(owning_job(table_, 1010, runs_), 12);
  EXPECT_EQ(owning_job(table_, 1069, runs_), std::nullopt);
}

}  // namespace
}  // namespace gpuq::runner
