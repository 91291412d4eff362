// SPDX-License-Identifier: Apache-2.0
// The fleet end to end (docs/fleet.md): real `gpuq daemon --fleet` nodes (fake GPUs, real job
// processes) sharing one bucket on a real S3 API (moto on loopback), driven by the real
// `gpuq fleet` CLI, with nodes killed, cut off from the bucket and cancelled from elsewhere.
// Every test waits for a known state (a claim, a file a job wrote, an event, a status) with a
// deadline and then checks exactly; none asserts a time. Each has its own S3 server, its own
// temporary directory and its own nodes, and leaves no process behind (FleetDaemon).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "base/time.h"
#include "fleet/agent.h"
#include "fleet/client.h"
#include "fleet/layout.h"
#include "fleet/testing/fake_executor.h"
#include "fleet_daemon.h"
#include "fleet_e2e_fixture.h"
#include "unix_http.h"
#include "s3_server.h"
#include "tcp_proxy.h"

namespace gpuq::fleet {
namespace {

using namespace e2e;

// ---- 1. Claims are exclusive under contention

TEST_F(FleetE2E, TwentyConcurrentClaimersOfOneJobExactlyOneWins) {
  FleetJob job;
  job.id = new_job_id(wall_ms());
  job.klass = "any";
  job.submitted_ms = wall_ms();
  job.spec.gpus = 1;
  job.spec.script_name = "train.sh";
  job.spec.script_text = "#!/bin/sh\ntrue\n";
  ASSERT_TRUE(fleet::submit(*store_, job));

  constexpr int kClaimers = 20;
  struct Claimer {
    std::string node;
    std::unique_ptr<ObjectStore> store;
    std::unique_ptr<testing::FakeExecutor> executor;
    std::unique_ptr<Agent> agent;
  };
  std::vector<Claimer> claimers(kClaimers);
  for (int i = 0; i < kClaimers; ++i) {
    auto store = open_store(url_, server_->options());
    ASSERT_TRUE(store) << store.error().message;
    claimers[i].store = std::move(*store);
    claimers[i].executor = std::make_unique<testing::FakeExecutor>(2);
    claimers[i].node = fmt::format("n{:02}", i);
    AgentOptions options;
    options.node = claimers[i].node;
    options.poll_ms = 200;
    options.heartbeat_ms = 500;
    options.lease_ms = 3'000;
    options.workdir = root_;
    claimers[i].agent =
        std::make_unique<Agent>(*claimers[i].store, claimers[i].store.get(), *claimers[i].executor, options);
  }
  // Each agent starts (its heartbeat), then all step at once: each scans, finds the job and
  // tries to create its claim.
  std::barrier together(kClaimers);
  std::atomic<int> started{0};
  std::vector<std::thread> threads;
  for (auto& claimer : claimers) {
    threads.emplace_back([&] {
      if (claimer.agent->start(mono_ms(), wall_ms())) ++started;
      together.arrive_and_wait();
      claimer.agent->step(mono_ms(), wall_ms());
    });
  }
  for (auto& thread : threads) thread.join();
  ASSERT_EQ(started, kClaimers);

  std::vector<std::string> winners;
  size_t submits = 0;
  for (auto& claimer : claimers) {
    submits += claimer.executor->specs.size();
    if (!claimer.executor->specs.empty()) {
      winners.push_back(claimer.node);
      EXPECT_EQ(claimer.agent->held(), std::vector<std::string>{job.id});
      EXPECT_EQ(claimer.executor->specs.begin()->second.fleet_id, job.id);
    }
  }
  EXPECT_EQ(submits, 1u) << "the job was handed to more than one executor (or to none)";
  ASSERT_EQ(winners.size(), 1u);
  auto held = claim(job.id);
  ASSERT_TRUE(held);
  EXPECT_EQ(held->node, winners[0]);
  EXPECT_EQ(held->attempt, 1);
  EXPECT_EQ(held->state, kRunning);
}

// ---- 2. Three nodes, two classes, a pinned chain

TEST_F(FleetE2E, ThreeNodesRunThirtyJobsOfTwoClassesAndAPinnedChainEachExactlyOnce) {
  // Each job's first claim must be the one that runs it (attempt 1): no lease lapses here, even
  // on a machine loaded enough to starve 3 s leases (FleetDaemonOptions::lease).
  lease_ = "20s";
  node("a", {"x"});
  node("b", {"x"});
  node("c", {"y"});
  std::map<std::string, std::string> klass_of;  // fleet id → class
  for (std::string klass : {"x", "y", "any"}) {
    std::vector<std::string> args = {"--gpus", "1"};
    if (klass != "any") args.insert(args.end(), {"--class", klass});
    for (int i = 1; i <= 10; ++i) args.push_back(recording_script(fmt::format("{}-{}.sh", klass, i), "sleep 0.1\n"));
    auto ids = submit(args);
    ASSERT_EQ(ids.size(), 10u);
    for (const auto& id : ids) klass_of[id] = klass;
  }
  std::vector<std::string> chain;
  for (int i = 1; i <= 3; ++i) {
    chain.push_back(recording_script(fmt::format("s{}.sh", i),
                                     fmt::format("echo \"s{} $GPUQ_FLEET_NODE\" >> {}\n", i, shared("chain.txt"))));
  }
  std::vector<std::string> chain_args = {"--node", "b", "--chain"};
  chain_args.insert(chain_args.end(), chain.begin(), chain.end());
  auto chain_ids = submit(chain_args);
  ASSERT_EQ(chain_ids.size(), 3u);
  for (const auto& id : chain_ids) klass_of[id] = "";

  ASSERT_TRUE(wait_until(
      [&] {
        return std::all_of(klass_of.begin(), klass_of.end(), [&](const auto& item) {
          auto c = claim(item.first);
          return c && is_final_state(c->state);
        });
      },
      120'000))
      << "not every job ended";

  // Each job ran exactly once, where its claim says, and only on a node of its class.
  std::map<std::string, std::vector<std::string>> ran;  // fleet id → "NODE ATTEMPT" of each run
  for (const auto& line : read_lines(shared("ran.txt"))) {
    auto space = line.find(' ');
    ran[line.substr(0, space)].push_back(line.substr(space + 1));
  }
  EXPECT_EQ(ran.size(), klass_of.size());
  for (const auto& [id, klass] : klass_of) {
    auto c = claim(id);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->state, kSucceeded) << id << ": " << c->reason;
    EXPECT_EQ(c->attempt, 1) << id;
    EXPECT_EQ(c->runs, 1) << id;
    ASSERT_EQ(ran[id].size(), 1u) << id << " ran " << ran[id].size() << " times";
    EXPECT_EQ(ran[id][0], c->node + " 1") << id;
    if (klass == "y") {
      EXPECT_EQ(c->node, "c") << id;
    } else if (klass == "x") {
      EXPECT_TRUE(c->node == "a" || c->node == "b") << id << " of class x ran on " << c->node;
    } else if (klass.empty()) {
      EXPECT_EQ(c->node, "b") << id;  // the chain, pinned to b
    }
  }
  EXPECT_EQ(read_lines(shared("chain.txt")), (std::vector<std::string>{"s1 b", "s2 b", "s3 b"}));
  // Every queue entry is gone with its job's end.
  auto left = store_->list("queues/");
  ASSERT_TRUE(left);
  EXPECT_TRUE(left->objects.empty()) << left->objects.front().key;

  // GET /v1/fleet on node a (the dashboard's Fleet page): every node, and the ended jobs.
  nlohmann::json view;
  auto read_view = [&] {
    auto answer = gpuq::testing::unix_get(nodes_[0]->home() + "/gpuq.sock", "/v1/fleet");
    view = answer.status == 200 ? nlohmann::json::parse(answer.body, nullptr, false) : nlohmann::json();
    return view.is_object() && !view["as_of_ms"].is_null();
  };
  ASSERT_TRUE(wait_until(read_view, kWaitMs)) << view.dump();
  EXPECT_EQ(view["node"], "a");
  std::set<std::string> names;
  for (const auto& n : view["nodes"]) names.insert(n.value("name", ""));
  EXPECT_EQ(names, (std::set<std::string>{"a", "b", "c"}));
  size_t succeeded = 0;
  for (const auto& j : view["jobs"]) succeeded += j.value("state", "") == "succeeded";
  EXPECT_GT(succeeded, 0u) << view.dump();
}

// ---- 3. A node dies mid-run

TEST_F(FleetE2E, AKilledNodesJobSucceedsOnAnotherNodeAndTheDeadNodeIsMarkedStale) {
  node("a", {"x"});
  node("b", {"x"});
  // The first attempt runs until killed; the next one succeeds at once.
  std::string id;
  int first = 0;
  ASSERT_NO_FATAL_FAILURE(submit_until_killed("x", id, first));
  auto held = claim(id);
  ASSERT_TRUE(held);
  ASSERT_EQ(held->attempt, 1);
  FleetDaemon& dead = held->node == "a" ? *nodes_[0] : *nodes_[1];
  const std::string other = held->node == "a" ? "b" : "a";
  ASSERT_EQ(dead.node(), held->node);

  dead.kill();
  EXPECT_FALSE(testing::process_alive(first));
  ASSERT_TRUE(wait_until([&] { return claim_is(id, kSucceeded); }, kWaitMs))
      << "the job did not succeed elsewhere; its claim: " << claim_text(id);
  auto ended = claim(id);
  EXPECT_EQ(ended->node, other);
  EXPECT_EQ(ended->attempt, 2);
  EXPECT_EQ(read_lines(shared("ran.txt")),
            (std::vector<std::string>{id + " " + dead.node() + " 1", id + " " + other + " 2"}));
  ASSERT_TRUE(wait_until([&] { return stale(dead.node()); }, kWaitMs)) << "fleet status never marked the dead node stale";
  auto alive = status_node(other);
  ASSERT_TRUE(alive);
  EXPECT_EQ(alive->value("stale", true), false);
}

// ---- 4. A node cut off from the bucket

TEST_F(FleetE2E, ANodeCutOffFromTheBucketLosesItsClaimStopsItsRunAndPublishesNothing) {
  auto proxy = testing::TcpProxy::start(server_->port());
  ASSERT_TRUE(proxy) << proxy.error().message;
  testing::TcpProxy& link = **proxy;
  proxies_.push_back(std::move(*proxy));
  FleetDaemon& a = node("a", {"x"}, link.endpoint());
  std::string id;
  int first = 0;
  ASSERT_NO_FATAL_FAILURE(submit_until_killed("x", id, first));
  ASSERT_EQ(claim(id)->node, "a");
  node("b", {"x"});  // it finds a's claim at its first scan and watches it

  link.cut();
  ASSERT_TRUE(wait_until([&] { return a.event("job.claim_lost", "fleet_id", id).has_value(); }, kWaitMs))
      << "node a never said it lost its claim";
  ASSERT_TRUE(wait_until([&] { return !testing::process_alive(first); }, kWaitMs)) << "a's run of the job kept going";
  ASSERT_TRUE(wait_until([&] { return claim_is(id, kSucceeded); }, kWaitMs))
      << "the job did not succeed on b; its claim: " << claim_text(id);
  EXPECT_EQ(claim(id)->node, "b");
  EXPECT_EQ(claim(id)->attempt, 2);

  // Back in touch: a writes its heartbeat again, and still publishes nothing for the job.
  ASSERT_TRUE(link.restore());
  const int64_t restored = wall_ms();
  ASSERT_TRUE(wait_until(
      [&] {
        auto beat = store_->get(keys::heartbeat("a"));
        auto doc = beat ? parse_object("heartbeat", beat->body) : Result<nlohmann::json>(tl::unexpected(beat.error()));
        auto parsed = doc ? heartbeat_from_json(*doc) : Result<Heartbeat>(tl::unexpected(doc.error()));
        return parsed && parsed->time_ms > restored && parsed->running.empty();
      },
      kWaitMs))
      << "node a did not come back";
  auto final_claim = claim(id);
  ASSERT_TRUE(final_claim);
  EXPECT_EQ(final_claim->node, "b");
  EXPECT_EQ(final_claim->attempt, 2);
  EXPECT_EQ(final_claim->state, kSucceeded);
  auto ended = store_->list(std::string(keys::kEnded));
  ASSERT_TRUE(ended);
  int ends = 0;
  for (const auto& info : ended->objects) ends += info.key.ends_with("-" + id);
  EXPECT_EQ(ends, 1);
  EXPECT_EQ(read_lines(shared("ran.txt")), (std::vector<std::string>{id + " a 1", id + " b 2"}));
}

// ---- 5. Declared data

TEST_F(FleetE2E, DeclaredInputsAndOutputsMakeTheRoundTripAndAnOutputPushedBeforeANodeDiedStays) {
  FleetDaemon& a = node("a");
  ASSERT_TRUE(store_->put("data/in/x.txt", "hello fleet\n"));
  std::string file = script("upper.sh",
                            "# gpuq-in: in/x.txt\n"
                            "# gpuq-out: out/*.txt\n"
                            "mkdir -p out\n"
                            "tr a-z A-Z < in/x.txt > out/upper.txt\n"
                            "wc -c < in/x.txt | tr -d ' ' > out/count.txt\n");
  auto ids = submit({file});
  ASSERT_EQ(ids.size(), 1u);
  ASSERT_TRUE(wait_until([&] { return claim(ids[0]) && is_final_state(claim(ids[0])->state); }, kWaitMs));
  EXPECT_EQ(claim(ids[0])->state, kSucceeded) << claim(ids[0])->reason;
  auto upper = store_->get("data/out/upper.txt");
  ASSERT_TRUE(upper) << upper.error().message;
  EXPECT_EQ(upper->body, "HELLO FLEET\n");
  auto count = store_->get("data/out/count.txt");
  ASSERT_TRUE(count) << count.error().message;
  EXPECT_EQ(count->body, "12\n");

  // An output written early is pushed while the job runs (sync_every), and survives its node.
  std::string early = script("early.sh", fmt::format("# gpuq-out: out/early.txt\n"
                                                     "mkdir -p out\n"
                                                     "echo early > out/early.txt\n"
                                                     "echo $$ > {}\n"
                                                     "while :; do sleep 0.05; done\n",
                                                     shared("early.pid")));
  auto early_ids = submit({"--node", "a", early});
  ASSERT_EQ(early_ids.size(), 1u);
  ASSERT_TRUE(wait_until([&] { return store_->get("data/out/early.txt").has_value(); }, kWaitMs))
      << "the early output was never pushed";
  EXPECT_TRUE(claim_is(early_ids[0], kRunning));
  a.kill();
  ASSERT_TRUE(wait_until([&] { return stale("a"); }, kWaitMs));
  auto kept = store_->get("data/out/early.txt");
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ(kept->body, "early\n");
  EXPECT_TRUE(claim_is(early_ids[0], kRunning)) << "a dead node published an end";
}

// ---- 6. Cancel from elsewhere

TEST_F(FleetE2E, ACancelFromAnotherMachinesCliStopsTheRunningJobAndEndsItCancelled) {
  FleetDaemon& a = node("a");
  std::string file = script("forever.sh", fmt::format("echo $$ > {}\nwhile :; do sleep 0.05; done\n", shared("pid")));
  auto ids = submit({file});
  ASSERT_EQ(ids.size(), 1u);
  int pid = 0;
  ASSERT_TRUE(wait_until([&] { return (pid = read_pid(shared("pid"))) > 0; }, kWaitMs));
  ASSERT_TRUE(claim_is(ids[0], kRunning));

  auto cancelled = fleet_json({"cancel", ids[0]});  // GPUQ_HOME is an empty directory: no daemon here
  EXPECT_EQ(cancelled.value("result", ""), "requested");
  ASSERT_TRUE(wait_until([&] { return !testing::process_alive(pid); }, kWaitMs)) << "the job kept running";
  ASSERT_TRUE(wait_until([&] { return claim(ids[0]) && is_final_state(claim(ids[0])->state); }, kWaitMs));
  auto ended = claim(ids[0]);
  EXPECT_EQ(ended->state, kCancelled);
  EXPECT_EQ(ended->node, "a");
  auto shown = fleet_json({"show", ids[0]});
  EXPECT_EQ(shown.value("state", ""), "cancelled");
  EXPECT_EQ(shown.value("cancel_requested", false), true);
  EXPECT_TRUE(a.run_processes().empty());
}

// ---- 7. Dependencies across nodes

TEST_F(FleetE2E, AnAfterDependencyAcrossNodesStartsOnlyOnceItsTargetSucceeded) {
  node("a");
  node("b");
  const std::string order = shared("order.txt");
  std::string first = script("first.sh", fmt::format("echo a-start >> {0}\n"
                                                     "while [ ! -e {1} ]; do sleep 0.05; done\n"
                                                     "echo a-end >> {0}\n",
                                                     order, shared("go")));
  auto first_id = submit({"--node", "a", "--name", "first", first});
  ASSERT_EQ(first_id.size(), 1u);
  ASSERT_TRUE(wait_until([&] { return !read_lines(order).empty(); }, kWaitMs));
  auto then_id = submit({"--node", "b", "--after", "first", script("then.sh", fmt::format("echo b >> {}\n", order))});
  // Submitted after it to the same node: b claims it in a scan that saw the dependent first.
  auto probe_id = submit({"--node", "b", script("probe.sh", fmt::format("echo c >> {}\n", order))});
  ASSERT_EQ(then_id.size(), 1u);
  ASSERT_EQ(probe_id.size(), 1u);
  ASSERT_TRUE(wait_until([&] { return claim_is(probe_id[0], kSucceeded); }, kWaitMs));
  EXPECT_FALSE(claim(then_id[0]).has_value()) << "the dependent was claimed while its target ran";
  EXPECT_TRUE(claim_is(first_id[0], kRunning));

  std::ofstream(shared("go")) << "go\n";
  ASSERT_TRUE(wait_until([&] { return claim(then_id[0]) && is_final_state(claim(then_id[0])->state); }, kWaitMs));
  EXPECT_EQ(claim(then_id[0])->state, kSucceeded);
  EXPECT_EQ(claim(then_id[0])->node, "b");
  EXPECT_EQ(claim(first_id[0])->state, kSucceeded);
  EXPECT_EQ(claim(first_id[0])->node, "a");
  EXPECT_EQ(read_lines(order), (std::vector<std::string>{"a-start", "c", "a-end", "b"}));
}

// ---- 8. What an idle node costs, and how soon it starts a job

TEST_F(FleetE2E, AnIdleNodeAtTheDefaultsCostsUnderADollarAMonthAndItsSubmitToStartIsMeasured) {
  // A fleet that has seen a job has a signal: every poll of an idle node is then a 304.
  ASSERT_TRUE(store_->put("signal", "seen"));
  FleetDaemon& a = node("a", {"idle"}, "", /*short_timings=*/false);
  const std::string signal_key = "fleet/signal";
  const std::string beat_key = "fleet/nodes/a/heartbeat.json";
  // Settled: its start (the conditions check, the heartbeat, the first scan, the node listing)
  // is done once a poll of the signal was answered 304.
  ASSERT_TRUE(wait_until(
      [&] {
        auto counts = server_->counts();
        return counts && std::any_of(counts->requests.begin(), counts->requests.end(), [&](const auto& r) {
                 return r.key == signal_key && r.status == 304;
               });
      },
      kWaitMs));
  ASSERT_TRUE(server_->reset_counts());
  constexpr double kWindowS = 12;
  std::this_thread::sleep_for(std::chrono::duration<double>(kWindowS));  // the window measured
  auto counts = server_->counts();
  ASSERT_TRUE(counts) << counts.error().message;

  std::vector<double> polls;
  int64_t beats = 0;
  for (const auto& r : counts->requests) {
    if (r.kind == "get" && r.key == signal_key) polls.push_back(r.time_s);
    if (r.kind == "put" && r.key == beat_key) ++beats;
  }
  const auto n = static_cast<int64_t>(polls.size());
  fmt::print("idle node over {} s: GET {} (304: {}), PUT {}, LIST {}, DELETE {}, HEAD {}, other {}\n", kWindowS,
             counts->get, counts->not_modified, counts->put, counts->list, counts->remove, counts->head,
             counts->other);
  // Defaults: a poll every 2 s (2.5 s after a quiet minute), a heartbeat every 30 s, a listing
  // of nodes/ every 5 minutes; nothing else while idle.
  EXPECT_GE(n, static_cast<int64_t>(kWindowS / 2.5) - 1);
  EXPECT_LE(n, static_cast<int64_t>(kWindowS / 2) + 1);
  EXPECT_EQ(counts->get, n) << "GETs of other keys than the signal";
  EXPECT_EQ(counts->not_modified, n) << "a poll of an unchanged signal carried a body";
  EXPECT_LE(beats, static_cast<int64_t>(std::ceil(kWindowS / 30)));
  EXPECT_EQ(counts->put, beats) << "PUTs of other keys than the heartbeat";
  EXPECT_LE(counts->list, 1);
  EXPECT_EQ(counts->remove, 0);
  EXPECT_EQ(counts->head + counts->other, 0);

  // The month at S3 Standard prices: the polls at the rate measured; the heartbeat and the
  // node listing come less often than the window, so at the intervals they run at (the
  // heartbeat's own, as it declares it; the agent's default listing interval).
  ASSERT_GE(n, 2);
  const double poll_rate = static_cast<double>(n - 1) / (polls.back() - polls.front());
  auto beat = store_->get(keys::heartbeat("a"));
  ASSERT_TRUE(beat);
  auto beat_doc = parse_object("heartbeat", beat->body);
  ASSERT_TRUE(beat_doc);
  auto heartbeat = heartbeat_from_json(*beat_doc);
  ASSERT_TRUE(heartbeat);
  EXPECT_EQ(heartbeat->interval_ms, 30'000);
  const double beat_rate = 1000.0 / static_cast<double>(heartbeat->interval_ms);
  const double list_rate = 1000.0 / static_cast<double>(AgentOptions{}.node_watch_ms);
  constexpr double kMonthS = 30.0 * 86'400;
  const double gets = poll_rate * kMonthS, puts = beat_rate * kMonthS, lists = list_rate * kMonthS;
  const double dollars = gets / 1000 * 0.0004 + (puts + lists) / 1000 * 0.005;
  fmt::print("idle node per month: {:.0f} GET (${:.3f}), {:.0f} PUT (${:.3f}), {:.0f} LIST (${:.3f}): ${:.3f}\n",
             gets, gets / 1000 * 0.0004, puts, puts / 1000 * 0.005, lists, lists / 1000 * 0.005, dollars);
  EXPECT_LT(dollars, 1.0);

  // Submit-to-start of a class job on this idle node, at the default poll (printed only).
  auto ids = submit({"--class", "idle", script("quick.sh", "true\n")});
  ASSERT_EQ(ids.size(), 1u);
  auto spec = read_job(*store_, ids[0]);
  ASSERT_TRUE(spec);
  std::optional<nlohmann::json> claimed;
  ASSERT_TRUE(wait_until([&] { return (claimed = a.event("job.claimed", "fleet_id", ids[0])).has_value(); }, kWaitMs));
  const int64_t local = claimed->value("job", int64_t{0});
  std::optional<int64_t> started;
  ASSERT_TRUE(wait_until(
      [&] {
        for (const auto& e : a.events()) {
          if (e.value("kind", "") == "job.started" && e.value("job", int64_t{0}) == local) {
            auto at = parse_rfc3339(e.value("time", ""));
            if (at) started = *at;
            return true;
          }
        }
        return false;
      },
      kWaitMs));
  ASSERT_TRUE(started);
  fmt::print("submit-to-start of a class job on an idle node (default poll): {} ms\n", *started - spec->submitted_ms);
  ASSERT_TRUE(wait_until([&] { return claim_is(ids[0], kSucceeded); }, kWaitMs));
}

}  // namespace
}  // namespace gpuq::fleet
