// SPDX-License-Identifier: Apache-2.0
// A run never outlives its claim (docs/fleet.md, "Guarantees"), end to end: real daemons as
// fleet nodes on a shared directory store, a real job. The node holding the job is frozen
// (SIGSTOP) for more than two leases while its run goes on: no agent renews the claim and no
// daemon could cancel the run, so the run's shim must stop it by itself before another node
// takes the job over. Each run of the job writes its start and end to a ledger with the
// machine's clock; no two runs may overlap. The test waits for states, never asserts a time.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fleet/client.h"
#include "fleet/layout.h"
#include "fleet_daemon.h"

namespace gpuq::fleet {
namespace {

namespace fs = std::filesystem;
using testing::FleetDaemon;
using testing::wait_until;

constexpr int kWaitMs = 60'000;  // a generous deadline for any state the test waits for
constexpr int64_t kLeaseMs = 3'000;  // FleetDaemonOptions::short_timings

// One line of the ledger: "start|end NODE ATTEMPT NANOSECONDS".
struct LedgerLine {
  std::string what, node;
  int attempt = 0;
  int64_t at_ns = 0;
};

std::vector<LedgerLine> read_ledger(const std::string& path) {
  std::vector<LedgerLine> lines;
  for (const std::string& text : testing::read_lines(path)) {
    LedgerLine line;
    std::istringstream(text) >> line.what >> line.node >> line.attempt >> line.at_ns;
    lines.push_back(line);
  }
  return lines;
}

class FleetClaimDeadline : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/gpuq-fdeadline-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    root_ = dir;
    fs::create_directories(root_ + "/bucket");
    fs::create_directories(root_ + "/cli-home");
    url_ = "dir://" + root_ + "/bucket";
    auto store = open_store(url_, {});
    ASSERT_TRUE(store) << store.error().message;
    store_ = std::move(*store);
  }
  void TearDown() override {
    for (auto& node : nodes_) {
      if (node->pid() > 0) ::kill(node->pid(), SIGCONT);  // a frozen node is stopped like the others
    }
    nodes_.clear();
    std::error_code ec;
    if (std::getenv("GPUQ_KEEP_TEST_DIRS") == nullptr) fs::remove_all(root_, ec);
  }

  FleetDaemon& node(const std::string& name) {
    testing::FleetDaemonOptions options;
    options.node = name;
    options.classes = {"x"};
    options.url = url_;
    nodes_.push_back(std::make_unique<FleetDaemon>(root_ + "/" + name, options));
    auto started = nodes_.back()->start();
    EXPECT_TRUE(started) << started.error().message;
    return *nodes_.back();
  }
  std::optional<Claim> claim(const std::string& id) const {
    auto read = read_claim(*store_, id);
    if (!read || !*read) return std::nullopt;
    return (*read)->claim;
  }

  std::string root_;
  std::string url_;
  std::unique_ptr<ObjectStore> store_;
  std::vector<std::unique_ptr<FleetDaemon>> nodes_;
};

TEST_F(FleetClaimDeadline, ARunOfAFrozenNodeStopsItselfBeforeAnotherNodeRunsTheJob) {
  FleetDaemon& a = node("a");
  FleetDaemon& b = node("b");
  // Attempt 1 runs until it is stopped; any later one runs a moment and succeeds.
  std::string ledger = root_ + "/ledger.txt";
  std::string script = root_ + "/job.sh";
  std::ofstream(script) << fmt::format(
      "#!/bin/sh\n"
      "echo \"start $GPUQ_FLEET_NODE $GPUQ_FLEET_ATTEMPT $(date +%s%N)\" >> {0}\n"
      "finish() {{ echo \"end $GPUQ_FLEET_NODE $GPUQ_FLEET_ATTEMPT $(date +%s%N)\" >> {0}; exit \"$1\"; }}\n"
      "trap 'finish 143' TERM\n"
      "echo $$ > {1}/pid.$GPUQ_FLEET_ATTEMPT\n"
      "if [ \"$GPUQ_FLEET_ATTEMPT\" = 1 ]; then while :; do sleep 0.05; done; fi\n"
      "sleep 0.5\n"
      "finish 0\n",
      ledger, root_);
  auto submitted = testing::fleet_cli(root_ + "/cli-home", url_, {}, {"submit", "--class", "x", "--json", script});
  ASSERT_EQ(submitted.status, 0) << submitted.out << submitted.err;
  auto ids = nlohmann::json::parse(submitted.out, nullptr, false);
  ASSERT_TRUE(ids.is_array() && ids.size() == 1) << submitted.out;
  std::string id = ids[0].value("id", "");
  int first = 0;
  ASSERT_TRUE(wait_until([&] { return (first = testing::read_pid(root_ + "/pid.1")) > 0; }, kWaitMs))
      << "attempt 1 never ran";
  auto held = claim(id);
  ASSERT_TRUE(held);
  FleetDaemon& frozen = held->node == "a" ? a : b;
  const std::string other = held->node == "a" ? "b" : "a";

  // Frozen: neither its agent (no renewals) nor its daemon (no cancel) does anything.
  ASSERT_EQ(::kill(frozen.pid(), SIGSTOP), 0);
  const auto frozen_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(wait_until([&] { return !testing::process_alive(first); }, kWaitMs))
      << "the run of the frozen node went on";
  ASSERT_TRUE(wait_until(
      [&] {
        auto c = claim(id);
        return c && c->state == kSucceeded;
      },
      kWaitMs))
      << "the job did not succeed on node " << other;
  EXPECT_EQ(claim(id)->node, other);
  EXPECT_EQ(claim(id)->attempt, 2);
  wait_until([&] { return std::chrono::steady_clock::now() - frozen_at > std::chrono::milliseconds(2 * kLeaseMs); });

  // Thawed, the node learns that its run stopped for want of a renewal, gives the claim up and
  // publishes nothing.
  ASSERT_EQ(::kill(frozen.pid(), SIGCONT), 0);
  ASSERT_TRUE(wait_until([&] { return frozen.event("job.claim_lost", "fleet_id", id).has_value(); }, kWaitMs))
      << "the frozen node never gave its claim up";
  std::string lapsed;
  ASSERT_TRUE(wait_until(
      [&] {
        for (const auto& event : frozen.events()) {
          if (event.value("kind", "") == "job.cancelled") lapsed = event["data"].value("claim_lapsed", "");
        }
        return !lapsed.empty();
      },
      kWaitMs))
      << "the frozen node's run did not end as stopped by its lapsed claim";
  EXPECT_NE(lapsed.find("its fleet claim was not renewed by "), std::string::npos) << lapsed;
  EXPECT_EQ(claim(id)->node, other);
  EXPECT_EQ(claim(id)->attempt, 2);
  EXPECT_EQ(claim(id)->state, kSucceeded);

  // Exactly one run at any moment: each ended before the next began.
  auto lines = read_ledger(ledger);
  ASSERT_EQ(lines.size(), 4u) << "two runs, each with a start and an end";
  std::vector<std::pair<LedgerLine, LedgerLine>> runs;  // (start, end) by attempt
  for (int attempt : {1, 2}) {
    LedgerLine start, end;
    for (const auto& line : lines) {
      if (line.attempt != attempt) continue;
      (line.what == "start" ? start : end) = line;
    }
    ASSERT_GT(start.at_ns, 0) << "attempt " << attempt << " has no start";
    ASSERT_GT(end.at_ns, 0) << "attempt " << attempt << " has no end";
    runs.emplace_back(start, end);
  }
  EXPECT_EQ(runs[0].first.node, frozen.node());
  EXPECT_EQ(runs[1].first.node, other);
  EXPECT_LT(runs[0].second.at_ns, runs[1].first.at_ns) << "the runs of attempts 1 and 2 overlapped";
}

}  // namespace
}  // namespace gpuq::fleet
