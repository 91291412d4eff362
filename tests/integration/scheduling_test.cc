// SPDX-License-Identifier: Apache-2.0
// The scheduling language end to end: dependencies, conditions, lanes, retries, timeouts and
// the queue controls, on a real daemon running real jobs.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <gtest/gtest.h>

#include "base/time.h"
#include "harness.h"

namespace gpuq::testing {
namespace {

auto state_is(const char* state) {
  return [state](const nlohmann::json& j) { return j["state"] == state; };
}

std::vector<std::string> event_kinds(const Harness& h, int64_t job) {
  std::vector<std::string> kinds;
  for (const auto& e : h.events()) {
    if (e["job"] == job) kinds.push_back(e["kind"]);
  }
  return kinds;
}

int64_t first_time(const Harness& h, int64_t job, const std::string& kind) {
  for (const auto& e : h.events()) {
    if (e["job"] == job && e["kind"] == kind) return e["time_ms"].get<int64_t>();
  }
  return -1;
}

TEST(Scheduling, TrainThenEvalChain) {
  Harness h("fake:1");
  h.start();
  int64_t train = h.submit_sh("echo trained > model.txt", {"--name", "train", "--gpus", "1"});
  int64_t eval = h.submit_sh("cat model.txt", {"--name", "eval", "--gpus", "1", "--after", "train"});
  ASSERT_EQ(h.gpuq({"wait", "eval", "--timeout", "30s"}).status, 0) << h.show(eval).dump();
  EXPECT_EQ(h.gpuq({"logs", "eval"}).out, "trained\n");
  EXPECT_LT(first_time(h, train, "job.succeeded"), first_time(h, eval, "job.started") + 1);
}

TEST(Scheduling, AFailedDependencyBlocksInACascadeAndRetryReleases) {
  Harness h("fake:1");
  h.start();
  h.touch("fail-once");
  int64_t a = h.submit_sh("if [ -e fail-once ]; then rm fail-once; exit 1; fi", {"--name", "a"});
  int64_t b = h.submit_sh("true", {"--name", "b", "--after", "a"});
  int64_t c = h.submit_sh("true", {"--name", "c", "--after", "b"});
  ASSERT_TRUE(h.wait_for(c, state_is("blocked"))) << h.show(c).dump();
  EXPECT_EQ(h.show(b)["state"], "blocked");
  EXPECT_NE(h.show(b)["reason"].get<std::string>().find("job " + std::to_string(a) + " failed"),
            std::string::npos) << h.show(b).dump();
  EXPECT_EQ(h.gpuq({"wait", "c", "--timeout", "5s"}).status, 1);  // blocked counts as done, not ok
  ASSERT_EQ(h.gpuq({"retry", "a"}).status, 0);
  ASSERT_EQ(h.gpuq({"wait", "a", "b", "c", "--timeout", "30s"}).status, 0);
  auto kinds = event_kinds(h, c);
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "job.blocked"), kinds.end());
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "job.unblocked"), kinds.end());
}

TEST(Scheduling, AFileDependencyIsReleasedByAnotherJob) {
  Harness h("fake:1");
  h.start();
  int64_t waiter = h.submit_sh("cat ready.txt", {"--wait-file", "ready.txt"});
  ASSERT_TRUE(h.wait_for(waiter, [](const nlohmann::json& j) {
    return j["reason"].get<std::string>().find("ready.txt does not exist") != std::string::npos;
  })) << h.show(waiter).dump();
  h.submit_sh("echo made > ready.txt");
  ASSERT_EQ(h.gpuq({"wait", std::to_string(waiter), "--timeout", "60s"}).status, 0);
  EXPECT_EQ(h.gpuq({"logs", std::to_string(waiter)}).out, "made\n");
}

TEST(Scheduling, DoneIfSkipsWorkAlreadyDoneAndVerifiesAfterwards) {
  Harness h("fake:1");
  h.start();
  h.touch("out.json");
  int64_t skipped = h.submit_sh("echo ran", {"--done-if", "test -s out.json"});
  ASSERT_TRUE(h.wait_for(skipped, state_is("skipped"))) << h.show(skipped).dump();
  EXPECT_TRUE(h.show(skipped)["runs"].empty());
  EXPECT_EQ(h.gpuq({"wait", std::to_string(skipped)}).status, 0);  // skipped counts as done
  // Exit 0 without producing what DONE_IF checks is a failure.
  int64_t liar = h.submit_sh("true", {"--done-if", "test -e never.txt"});
  ASSERT_TRUE(h.wait_for(liar, state_is("failed"))) << h.show(liar).dump();
  EXPECT_NE(h.show(liar)["reason"].get<std::string>().find("DONE_IF"), std::string::npos);
  bool unverified = false;
  for (const auto& e : h.events()) {
    if (e["job"] == liar && e["kind"] == "job.failed") unverified = e["data"].value("verified", true) == false;
  }
  EXPECT_TRUE(unverified);
}

TEST(Scheduling, ARequiresThatBecomesTrue) {
  Harness h("fake:1");
  std::ofstream(h.home() + "/config.toml") << "[runs]\nrequires_poll = \"100ms\"\nrequires_poll_max = \"200ms\"\n";
  h.start();
  int64_t id = h.submit_sh("echo go", {"--requires", "test -f flag"});
  ASSERT_TRUE(h.wait_for(id, [](const nlohmann::json& j) {
    return j["reason"].get<std::string>().find("REQUIRES false") != std::string::npos;
  })) << h.show(id).dump();
  h.touch("flag");
  ASSERT_EQ(h.gpuq({"wait", std::to_string(id), "--timeout", "30s"}).status, 0);
}

TEST(Scheduling, RetriesThenSuccess) {
  Harness h("fake:1");
  h.start();
  int64_t id = h.submit_sh(
      "n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; [ $n -ge 3 ]",
      {"--retries", "3", "--retry-delay", "100ms"});
  ASSERT_EQ(h.gpuq({"wait", std::to_string(id), "--timeout", "30s"}).status, 0) << h.show(id).dump();
  auto job = h.show(id);
  ASSERT_EQ(job["runs"].size(), 3u);
  EXPECT_EQ(job["runs"][0]["outcome"], "failed");
  EXPECT_EQ(job["runs"][2]["outcome"], "succeeded");
  auto kinds = event_kinds(h, id);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "job.retrying"), 2);
}

TEST(Scheduling, RetriesRunOutAndTheJobFails) {
  Harness h("fake:1");
  h.start();
  int64_t id = h.submit_sh("exit 4", {"--retries", "1", "--retry-delay", "50ms"});
  EXPECT_EQ(h.gpuq({"wait", std::to_string(id), "--timeout", "30s"}).status, 1);
  auto job = h.show(id);
  EXPECT_EQ(job["state"], "failed");
  EXPECT_EQ(job["runs"].size(), 2u);
}

TEST(Scheduling, TimeoutStopsTheRun) {
  Harness h("fake:1");
  std::ofstream(h.home() + "/config.toml") << "[runs]\nkill_grace = \"200ms\"\n";
  h.start();
  int64_t id = h.submit_sh("trap '' TERM; sleep 30", {"--timeout", "300ms", "--gpus", "1"});
  EXPECT_EQ(h.gpuq({"wait", std::to_string(id), "--timeout", "30s"}).status, 1);
  auto job = h.show(id);
  EXPECT_EQ(job["state"], "failed");
  EXPECT_EQ(job["runs"][0]["outcome"], "timed-out");
  EXPECT_EQ(job["runs"][0]["signal"], 9);  // it ignored SIGTERM
  // The GPU serves again.
  int64_t next = h.submit_sh("true", {"--gpus", "1"});
  EXPECT_EQ(h.gpuq({"wait", std::to_string(next), "--timeout", "30s"}).status, 0);
}

TEST(Scheduling, HoldAndRelease) {
  Harness h("fake:1");
  h.start();
  int64_t id = h.submit_sh("true", {"--hold"});
  EXPECT_EQ(h.show(id)["state"], "held");
  int64_t other = h.submit_sh("true");
  ASSERT_EQ(h.gpuq({"wait", std::to_string(other), "--timeout", "30s"}).status, 0);
  EXPECT_EQ(h.show(id)["state"], "held");
  ASSERT_EQ(h.gpuq({"release", std::to_string(id)}).status, 0);
  ASSERT_EQ(h.gpuq({"wait", std::to_string(id), "--timeout", "30s"}).status, 0);
  int64_t later = h.submit_sh("while [ ! -e go ]; do sleep 0.02; done", {"--gpus", "1"});
  int64_t queued = h.submit_sh("true", {"--gpus", "1"});
  ASSERT_EQ(h.gpuq({"hold", std::to_string(queued)}).status, 0);
  EXPECT_EQ(h.show(queued)["state"], "held");
  h.touch("go");
  ASSERT_EQ(h.gpuq({"wait", std::to_string(later), "--timeout", "30s"}).status, 0);
  EXPECT_EQ(h.show(queued)["state"], "held");
  ASSERT_EQ(h.gpuq({"release", std::to_string(queued)}).status, 0);
  ASSERT_EQ(h.gpuq({"wait", std::to_string(queued), "--timeout", "30s"}).status, 0);
}

TEST(Scheduling, MoveChangesTheOrder) {
  Harness h("fake:1");
  h.start();
  int64_t blocker = h.submit_sh("while [ ! -e go ]; do sleep 0.02; done", {"--gpus", "1"});
  ASSERT_TRUE(h.wait_for(blocker, state_is("running")));
  int64_t a = h.submit_sh("true", {"--gpus", "1", "--name", "a"});
  int64_t b = h.submit_sh("true", {"--gpus", "1", "--name", "b"});
  int64_t c = h.submit_sh("true", {"--gpus", "1", "--name", "c"});
  ASSERT_EQ(h.gpuq({"move", "c", "--top"}).status, 0);
  ASSERT_EQ(h.gpuq({"move", "a", "--after", "b"}).status, 0);
  h.touch("go");
  ASSERT_EQ(h.gpuq({"wait", "a", "b", "c", "--timeout", "30s"}).status, 0);
  std::vector<int64_t> order;
  for (const auto& e : h.events()) {
    if (e["kind"] == "job.started" && e["job"] != blocker) order.push_back(e["job"]);
  }
  EXPECT_EQ(order, (std::vector<int64_t>{c, b, a}));
}

TEST(Scheduling, DrainStartsNothingNewUntilUndrain) {
  Harness h("fake:1");
  h.start();
  int64_t running = h.submit_sh("while [ ! -e go ]; do sleep 0.02; done");
  ASSERT_TRUE(h.wait_for(running, state_is("running")));
  ASSERT_EQ(h.gpuq({"drain"}).status, 0);
  int64_t waiting = h.submit_sh("true");
  h.touch("go");
  ASSERT_EQ(h.gpuq({"wait", std::to_string(running), "--timeout", "30s"}).status, 0);
  ASSERT_TRUE(h.wait_for(waiting, [](const nlohmann::json& j) {
    return j["reason"].get<std::string>().find("draining") != std::string::npos;
  })) << h.show(waiting).dump();
  EXPECT_EQ(h.gpuq_json({"status", "--json"})["draining"], true);
  ASSERT_EQ(h.gpuq({"undrain"}).status, 0);
  ASSERT_EQ(h.gpuq({"wait", std::to_string(waiting), "--timeout", "30s"}).status, 0);
}

TEST(Scheduling, ADownloadLaneNeverOverlapsGpuWork) {
  Harness h("fake:2");
  std::ofstream(h.home() + "/config.toml") << "[lanes.net]\ncapacity = 1\nexcludes = [\"gpu\"]\n";
  h.start();
  auto traced = [&](const std::string& tag) {
    return "s=$(date +%s%N); sleep 0.2; echo \"" + tag + " $s $(date +%s%N)\" >> '" + h.work() + "/trace.txt'";
  };
  std::vector<std::string> ids;
  ids.push_back(std::to_string(h.submit_sh(traced("gpu"), {"--gpus", "1"})));
  ids.push_back(std::to_string(h.submit_sh(traced("net"), {"--lane", "net"})));
  ids.push_back(std::to_string(h.submit_sh(traced("net"), {"--lane", "net"})));
  ids.push_back(std::to_string(h.submit_sh(traced("gpu"), {"--gpus", "1"})));
  std::vector<std::string> args = {"wait"};
  args.insert(args.end(), ids.begin(), ids.end());
  args.insert(args.end(), {"--timeout", "60s"});
  ASSERT_EQ(h.gpuq(args).status, 0);
  struct Span { std::string tag; int64_t start, end; };
  std::vector<Span> spans;
  std::ifstream trace(h.path("trace.txt"));
  for (Span s; trace >> s.tag >> s.start >> s.end;) spans.push_back(s);
  ASSERT_EQ(spans.size(), 4u);
  for (const auto& x : spans) {
    for (const auto& y : spans) {
      if (&x == &y || (x.tag == "gpu" && y.tag == "gpu")) continue;
      bool overlap = x.start < y.end && y.start < x.end;
      EXPECT_FALSE(overlap) << x.tag << " overlapped " << y.tag;
    }
  }
  // An unknown lane is refused at submit.
  auto r = h.gpuq({"submit", "--lane", "disk", "--", "true"});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("unknown lane 'disk'"), std::string::npos) << r.err;
}

TEST(Scheduling, UnknownDependencyIsRefused) {
  Harness h("fake:1");
  h.start();
  auto r = h.gpuq({"submit", "--after", "nosuchjob", "--", "true"});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("nosuchjob"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gpuq::testing

namespace gpuq::testing {
namespace {

TEST(Scheduling, StatusPredictsWhenWaitingJobsStart) {
  Harness h("fake:1");
  h.start();
  int64_t running = h.submit_sh("while [ ! -e go ]; do sleep 0.02; done", {"--gpus", "1", "--est", "10m"});
  ASSERT_TRUE(h.wait_for(running, state_is("running")));
  int64_t next = h.submit_sh("true", {"--gpus", "1", "--est", "5m"});
  int64_t after = h.submit_sh("true", {"--gpus", "1", "--est", "5m"});
  auto status = h.gpuq_json({"status", "--json"});
  std::map<int64_t, std::string> eta;
  for (const auto& j : status["jobs"]) {
    if (j["state"] == "pending") eta[j["id"]] = j["eta"].is_null() ? "" : j["eta"].get<std::string>();
  }
  ASSERT_FALSE(eta[next].empty()) << status.dump();
  ASSERT_FALSE(eta[after].empty()) << status.dump();
  // The running job has ~10m left, so the next starts ~10m from now and the one after ~5m later.
  int64_t started = 0;
  for (const auto& e : h.events()) {
    if (e["kind"] == "job.started" && e["job"] == running) started = e["time_ms"];
  }
  auto parse = [](const std::string& t) { return gpuq::parse_rfc3339(t).value_or(0); };
  EXPECT_NEAR(parse(eta[next]) - started, 10 * 60'000, 60'000);
  EXPECT_NEAR(parse(eta[after]) - parse(eta[next]), 5 * 60'000, 1'000);
  // A job waiting on a file starts when the file appears, which no estimate predicts.
  int64_t on_file = h.submit_sh("true", {"--est", "1m", "--wait-file", "never.txt"});
  int64_t behind_file = h.submit_sh("true", {"--est", "1m", "--after", std::to_string(on_file)});
  status = h.gpuq_json({"status", "--json"});
  for (const auto& j : status["jobs"]) {
    if (j["id"] == on_file || j["id"] == behind_file) {
      EXPECT_TRUE(j["eta"].is_null()) << j.dump();
    }
    if (j["id"] == next) {
      EXPECT_FALSE(j["eta"].is_null()) << j.dump();
    }
  }
  // Without an estimate on an active job there is no honest ETA, and status says why.
  h.submit_sh("true", {"--gpus", "1"});
  status = h.gpuq_json({"status", "--json"});
  for (const auto& j : status["jobs"]) {
    if (j["state"] == "pending") {
      EXPECT_TRUE(j["eta"].is_null()) << j.dump();
    }
  }
  EXPECT_NE(status["eta_note"].get<std::string>().find("no estimate"), std::string::npos);
  h.touch("go");
}

}  // namespace
}  // namespace gpuq::testing

namespace gpuq::testing {
namespace {

TEST(Scheduling, ACancelDuringATimeoutsGracePeriodIsNotRetried) {
  Harness h("fake:1");
  std::ofstream(h.home() + "/config.toml") << "[runs]\nkill_grace = \"2s\"\n";
  h.start();
  int64_t id = h.submit_sh("trap '' TERM; sleep 30", {"--timeout", "200ms", "--retries", "2", "--retry-delay", "50ms"});
  ASSERT_TRUE(wait_until([&] { return first_time(h, id, "job.timeout") > 0; }));
  ASSERT_EQ(h.gpuq({"cancel", std::to_string(id)}).status, 0);
  ASSERT_TRUE(h.wait_for(id, state_is("cancelled"))) << h.show(id).dump();
  // A retry, had one been kept, would be due 50 ms (--retry-delay) after the run's end was
  // recorded: wait for that moment on the daemon's clock, then for two passes, either of which
  // would have started it.
  int64_t retry_due_ms = first_time(h, id, "job.cancelled") + 50;
  ASSERT_TRUE(wait_until([&] { return h.health().value("now_ms", int64_t{0}) >= retry_due_ms; }));
  h.wait_passes(2);
  auto job = h.show(id);
  EXPECT_EQ(job["state"], "cancelled");
  EXPECT_EQ(job["runs"].size(), 1u) << job.dump();
  EXPECT_TRUE(job["retry_at"].is_null()) << job.dump();
  auto kinds = event_kinds(h, id);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "job.started"), 1);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "job.retrying"), 0);
  EXPECT_EQ(kinds.back(), "job.cancelled");
}

TEST(Scheduling, AHugeNumericDependencyIsRefusedNotFatal) {
  Harness h("fake:1");
  h.start();
  auto r = h.gpuq({"submit", "--after", "99999999999999999999", "--", "true"});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
  EXPECT_EQ(h.gpuq({"status"}).status, 0);  // the daemon is still there
}

}  // namespace
}  // namespace gpuq::testing
