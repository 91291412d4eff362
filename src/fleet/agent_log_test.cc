// SPDX-License-Identifier: Apache-2.0
// The log a node publishes for an attempt (fleet/log_tail.h): its runs' logs, cut to their tail,
// published again whenever a run wrote more, also once the log is past its limit. Virtual
// clocks, an in-memory bucket, a fake daemon; the logs are real files.
#include <filesystem>
#include <fstream>

#include "fleet/agent.h"
#include "fleet/agent_test_support.h"
#include "fleet/layout.h"
#include "fleet/log_tail.h"

namespace gpuq::fleet {
namespace {

using namespace testing;

class FleetAgentLog : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() / ("gpuq-agent-log-" + random_token())).string();
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  void append(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary | std::ios::app) << text;
  }
  std::string dir_;
};

TEST_F(FleetAgentLog, TheTailIsCutFromTheRunsLogsInOrder) {
  append("1.log", "first run\n");
  append("2.log", "0123456789");
  std::vector<std::string> logs = {path("1.log"), path("2.log"), path("missing.log")};
  const std::string whole = "=== run 1 ===\nfirst run\n=== run 2 ===\n0123456789=== run 3 ===\n";
  EXPECT_EQ(log_size(logs), whole.size());
  EXPECT_EQ(log_tail(logs, 1000), whole);
  for (uint64_t max : {uint64_t{0}, uint64_t{5}, uint64_t{20}, uint64_t{33}, uint64_t{60}}) {
    std::string tail = log_tail(logs, max);
    std::string expected = fmt::format("[the first {} bytes are left out: the fleet keeps the last {}]\n",
                                       whole.size() - max, max) +
                           whole.substr(whole.size() - max);
    EXPECT_EQ(tail, expected) << "max " << max;
  }
  EXPECT_EQ(log_tail({path("1.log")}, 4), "[the first 6 bytes are left out: the fleet keeps the last 4]\nrun\n");
}

TEST_F(FleetAgentLog, ALargeLogIsReadFromItsEnd) {
  {  // 3 GiB of a sparse file, then a line: reading it whole would take 3 GiB of memory
    std::ofstream big(path("big.log"), std::ios::binary);
    big.seekp((3LL << 30) - 1);
    big << '\0';
  }
  append("big.log", "the end\n");
  EXPECT_EQ(log_size({path("big.log")}), (3ULL << 30) + 8);
  EXPECT_EQ(log_tail({path("big.log")}, 8),
            fmt::format("[the first {} bytes are left out: the fleet keeps the last 8]\nthe end\n",
                        3ULL << 30));
}

TEST_F(FleetAgentLog, ALogPastItsLimitIsPublishedAgainAsItsTailMovesOn) {
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 1, "", "", [](AgentOptions& o) {
    o.max_log_bytes = 8;
    o.sync_every_ms = 1'000;
  });
  a.start();
  FleetJob job = seed(a.store, "any", 1, 5);
  a.run_until(100);
  LocalJob& run = a.executor.jobs.at(claim_of(a.store, job.id).local_id);
  run.state = JobState::kRunning;
  run.started = true;
  run.runs = 1;
  run.logs = {path("output.log")};
  append("output.log", "0123456789abcdefghij");
  a.run_until(kLease);  // the agent syncs at its next wake after sync_every
  auto first = a.store.get(keys::log(job.id, 1));
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->body, "[the first 12 bytes are left out: the fleet keeps the last 8]\ncdefghij");
  // Four bytes more: what is kept has the same size, and its text moved on.
  append("output.log", "KLMN");
  a.run_until(2 * kLease);
  auto second = a.store.get(keys::log(job.id, 1));
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->body, "[the first 16 bytes are left out: the fleet keeps the last 8]\nghijKLMN");
}

// A run that ended: its log's last part is published before its end is. A failed push of it
// is tried again (the end waits); one that keeps failing gives way after the end's rounds of
// pushes, and the end's reason says the log stops short.
TEST_F(FleetAgentLog, TheLogsLastPartIsPublishedBeforeTheEnd) {
  for (int failures : {1, -1}) {
    SCOPED_TRACE(failures == 1 ? "the last push fails once" : "every last push fails");
    auto bucket = std::make_shared<Bucket>();
    Node a(bucket, "a", 1, "", "", [](AgentOptions& o) { o.sync_every_ms = 1'000; });
    a.start();
    FleetJob job = seed(a.store, "any", 1, 5);
    a.run_until(100);
    LocalJob& run = a.executor.jobs.at(claim_of(a.store, job.id).local_id);
    const std::string log = path(fmt::format("output-{}.log", failures));
    run.state = JobState::kRunning;
    run.started = true;
    run.runs = 1;
    run.logs = {log};
    std::ofstream(log, std::ios::binary) << "step 1\n";
    a.run_until(kLease);
    auto synced = a.store.get(keys::log(job.id, 1));
    ASSERT_TRUE(synced) << synced.error().message;
    ASSERT_EQ(synced->body, log_tail(run.logs, AgentOptions{}.max_log_bytes));

    std::ofstream(log, std::ios::binary | std::ios::app) << "done: 60 steps\n";
    run.state = JobState::kSucceeded;
    run.exit_code = 0;
    a.store.fail_puts_of(keys::log(job.id, 1), failures);
    a.nudge();
    a.run_until(kLease + 10 * 60'000);
    Claim claim = claim_of(a.store, job.id);
    EXPECT_EQ(claim.state, "succeeded");
    auto last = a.store.get(keys::log(job.id, 1));
    ASSERT_TRUE(last) << last.error().message;
    if (failures == 1) {
      EXPECT_EQ(last->body, log_tail(run.logs, AgentOptions{}.max_log_bytes));
      EXPECT_EQ(claim.reason.find("log"), std::string::npos) << claim.reason;
    } else {
      EXPECT_EQ(last->body, synced->body);
      EXPECT_NE(claim.reason.find("its log's last part could not be published"), std::string::npos)
          << claim.reason;
    }
  }
}

// A job whose local job is gone (the daemon lost it) ends failed; the log published while it
// ran stays as it was: a job that is gone has no logs to read, not an empty one.
TEST_F(FleetAgentLog, ALogIsKeptWhenTheLocalJobIsGone) {
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 1, "", "", [](AgentOptions& o) { o.sync_every_ms = 1'000; });
  a.start();
  FleetJob job = seed(a.store, "any", 1, 5);
  a.run_until(100);
  const int64_t local_id = claim_of(a.store, job.id).local_id;
  LocalJob& run = a.executor.jobs.at(local_id);
  run.state = JobState::kRunning;
  run.started = true;
  run.runs = 1;
  run.logs = {path("gone.log")};
  std::ofstream(path("gone.log"), std::ios::binary) << "step 1\n";
  a.run_until(kLease);
  auto synced = a.store.get(keys::log(job.id, 1));
  ASSERT_TRUE(synced) << synced.error().message;
  ASSERT_NE(synced->body.find("step 1"), std::string::npos);
  a.executor.jobs.erase(local_id);
  a.nudge();
  a.run_until(kLease + 60'000);
  Claim claim = claim_of(a.store, job.id);
  EXPECT_EQ(claim.state, "failed");
  auto kept = a.store.get(keys::log(job.id, 1));
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ(kept->body, synced->body);
}

}  // namespace
}  // namespace gpuq::fleet
