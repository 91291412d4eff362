// SPDX-License-Identifier: Apache-2.0
// The claim deadline files a node's agent keeps for its runs' shims (ClaimDeadlineFiles): named
// in the local job's spec, moved on by every renewal, kept across a daemon restart, removed
// when the claim is dropped; and a run that its shim stopped for a lapsed claim gives the claim
// up instead of publishing an end. Virtual clocks, an in-memory bucket, a fake daemon.
#include <filesystem>

#include "fleet/agent.h"
#include "fleet/agent_test_support.h"
#include "model/claim_deadline.h"
#include "os/process.h"

namespace gpuq::fleet {
namespace {

using namespace testing;

class FleetAgentDeadlines : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() / ("gpuq-agent-deadlines-" + random_token())).string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string file(const std::string& fleet_id, int attempt) const {
    return dir_ + "/" + fleet_id + "." + std::to_string(attempt) + ".deadline";
  }
  // The deadline in `path`; {0, 0} when there is none.
  static ClaimDeadline read(const std::string& path) {
    auto text = os::read_file(path);
    auto parsed = text ? parse_claim_deadline(*text) : Result<ClaimDeadline>(tl::unexpected(text.error()));
    return parsed ? *parsed : ClaimDeadline{};
  }

  std::shared_ptr<Bucket> bucket_ = std::make_shared<Bucket>();
  std::string dir_;
};

TEST_F(FleetAgentDeadlines, EachRenewalMovesTheRunsDeadlineOn) {
  Node a(bucket_, "a", 1, "", dir_);
  a.start();
  FleetJob job = seed(a.store, "any", 1, 5);
  a.run_until(1'000);
  ASSERT_EQ(a.executor.specs.size(), 1u);
  EXPECT_EQ(a.executor.specs.begin()->second.claim_deadline_file, file(job.id, 1));
  for (int64_t at : {int64_t{1'000}, 3 * kLease, 7 * kLease}) {
    a.run_until(at);
    ClaimDeadline deadline = read(file(job.id, 1));
    // The last renewal was at most a renewal interval ago, and the run stops half a lease after it.
    EXPECT_GT(deadline.stop_at_boot_ms, at - kLease / 6 + kLease / 2) << "at " << at;
    EXPECT_LE(deadline.stop_at_boot_ms, at + kLease / 2) << "at " << at;
    EXPECT_EQ(deadline.kill_by_boot_ms - deadline.stop_at_boot_ms, kLease / 4);
  }
  a.executor.end(claim_of(a.store, job.id).local_id, 0);
  a.nudge();
  a.run_until(7 * kLease + 1);
  ASSERT_EQ(claim_of(a.store, job.id).state, "succeeded");
  EXPECT_FALSE(std::filesystem::exists(file(job.id, 1))) << "the file of an ended claim stays";
}

TEST_F(FleetAgentDeadlines, ARunStoppedByItsShimGivesTheClaimUpAndPublishesNoEnd) {
  Node a(bucket_, "a", 1, "", dir_);
  a.start();
  FleetJob job = seed(a.store, "any", 1, 5);
  a.run_until(1'000);
  int64_t local = claim_of(a.store, job.id).local_id;
  // The daemon was stopped past the deadline; back, it finds the run stopped by its shim.
  LocalJob& stopped = a.executor.jobs.at(local);
  stopped.state = JobState::kCancelled;
  stopped.started = true;
  stopped.runs = 1;
  stopped.reason = "run 1 stopped: its fleet claim was not renewed by then";
  stopped.claim_lapsed = true;
  a.nudge();
  a.run_until(1'001);
  ASSERT_EQ(a.executor.count("job.claim_lost"), 1);
  EXPECT_EQ(a.executor.events.back().data.value("why", ""), stopped.reason);
  Claim claim = claim_of(a.store, job.id);
  EXPECT_EQ(claim.state, "running") << "the end of a run that lost its claim was published";
  EXPECT_FALSE(std::filesystem::exists(file(job.id, 1)));
  // Nobody else serves the queue: the node takes the job again once the claim stood for a lease.
  a.run_until(1'000 + 3 * kLease);
  claim = claim_of(a.store, job.id);
  EXPECT_EQ(claim.attempt, 2);
  EXPECT_EQ(claim.state, "running");
  EXPECT_EQ(a.executor.specs.rbegin()->second.claim_deadline_file, file(job.id, 2));
  EXPECT_TRUE(std::filesystem::exists(file(job.id, 2)));
}

TEST_F(FleetAgentDeadlines, ADaemonRestartGoesOnRenewingTheSameFile) {
  std::string state = dir_ + "-state.json";
  Node a(bucket_, "a", 1, state, dir_);
  a.start();
  FleetJob job = seed(a.store, "any", 1, 5);
  a.run_until(1'000);
  int64_t before = read(file(job.id, 1)).stop_at_boot_ms;
  ASSERT_GT(before, 0);
  // Another agent on the same state file and directory: the daemon restarted (the clock went on).
  AgentOptions options;
  options.node = "a";
  options.lease_ms = kLease;
  options.state_file = state;
  options.claim_deadline_dir = dir_;
  int64_t now = 1'000 + kLease / 4;
  options.mono_clock = [&now] { return now; };
  Agent again(a.store, &a.data, a.executor, options);
  ASSERT_TRUE(again.start(now, now));
  ASSERT_EQ(again.held(), std::vector<std::string>{job.id});
  EXPECT_EQ(read(file(job.id, 1)).stop_at_boot_ms, now + kLease / 2) << "the adoption's renewal moved it on";
  std::filesystem::remove(state);
}

}  // namespace
}  // namespace gpuq::fleet
