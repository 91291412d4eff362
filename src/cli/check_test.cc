// SPDX-License-Identifier: Apache-2.0
// The watchers from the client's side, against a scripted daemon: `gpuq check` (healthy, a
// stale heartbeat, GPUs that need a person, idle with work, a long condition wait, an
// unreachable daemon, and the timeout it passes on) and the watcher flags of `gpuq submit`.
#include <gtest/gtest.h>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/fake_transport.h"

namespace gpuq::cli {
namespace {

using testing::json_answer;

constexpr int64_t kNow = 1'795'949'736'000;

Json healthy() {
  Json health = Json::parse(R"({"ok": true, "pid": 42, "active_jobs": 3, "heartbeat_interval_ms": 30000,
      "gpus": [{"name": "gpu0", "state": "busy", "attention": null, "foreign": null}],
      "episodes": [], "waiting_on_conditions": []})");
  health["now_ms"] = kNow;
  health["heartbeat_at_ms"] = kNow - 4'000;
  return health;
}

class Check : public testing::ScriptedCli {
 protected:
  int check(const Json& health, std::vector<std::string> flags = {}) {
    script({{"/v1/health", json_answer(200, health.dump())}});
    flags.insert(flags.begin(), "check");
    return run(flags);
  }
};

TEST_F(Check, HealthyExitsZeroWithOneLine) {
  EXPECT_EQ(check(healthy()), kExitOk) << err();
  EXPECT_EQ(out(), "ok: daemon pid 42 answers, heartbeat 4s ago, 3 active job(s)\n");
  // The hard timeout is the one the request carried.
  ASSERT_EQ(process_.daemon.requests.size(), 1u);
  EXPECT_EQ(process_.daemon.requests[0].timeout, Millis(10'000));
}

TEST_F(Check, ATimeoutFlagReachesTheRequest) {
  EXPECT_EQ(check(healthy(), {"--timeout", "2s"}), kExitOk) << err();
  EXPECT_EQ(process_.daemon.requests[0].timeout, Millis(2'000));
}

TEST_F(Check, AStaleHeartbeatIsAProblem) {
  Json health = healthy();
  health["heartbeat_at_ms"] = kNow - 5 * 60'000;
  EXPECT_EQ(check(health), kExitFailed);
  EXPECT_EQ(out().rfind("heartbeat stale: last written 5m00s ago (written every 30s, stale after 1m30s)", 0), 0u)
      << out();
  process_.out.str("");
  EXPECT_EQ(check(health, {"--stale-after", "10m"}), kExitOk) << out();
}

TEST_F(Check, OneLinePerProblem) {
  Json health = healthy();
  health["gpus"] = Json::parse(R"([
      {"name": "gpu0", "state": "attention", "foreign": null,
       "attention": {"since": "2026-11-29T10:00:00Z", "why": "run 3 left processes"}},
      {"name": "gpu1", "state": "foreign", "attention": null,
       "foreign": {"since": "2026-11-29T09:00:00Z",
                   "processes": [{"pid": 77, "command": "python serve.py", "user": "bob"}]}},
      {"name": "gpu2", "state": "free", "attention": null, "foreign": null}])");
  health["episodes"] = Json::parse(R"([{"kind": "queue.idle_with_work", "for_ms": 720000,
      "detail": {"why": "1 GPU(s) free while 2 job(s) wait",
                 "heads": [{"job": 9, "reason": "lane net is held by job 3"}]}},
      {"kind": "job.quiet", "for_ms": 5000, "detail": {}}])");
  health["waiting_on_conditions"] = Json::parse(R"([
      {"job": 12, "for_ms": 7200000, "why": "file /data/ready does not exist"},
      {"job": 13, "for_ms": 60000, "why": "REQUIRES false"}])");
  EXPECT_EQ(check(health), kExitFailed);
  EXPECT_EQ(out(),
            "gpu0 in attention since 2026-11-29T10:00:00Z: run 3 left processes; check its "
            "processes, then run gpuq release --attention gpu0\n"
            "gpu1 held by a process no job owns since 2026-11-29T09:00:00Z: pid 77 (python "
            "serve.py, user bob)\n"
            "idle with work for 12m00s: 1 GPU(s) free while 2 job(s) wait; first in line: job 9 (lane "
            "net is held by job 3)\n"
            "job 12 waiting on a condition for 2h00m: file /data/ready does not exist\n");
  process_.out.str("");
  EXPECT_EQ(check(health, {"--max-wait", "3h", "--json"}), kExitFailed);
  Json answer = Json::parse(out());
  EXPECT_EQ(answer["ok"], false);
  ASSERT_EQ(answer["problems"].size(), 3u);
  EXPECT_EQ(answer["problems"][0]["kind"], "gpu_attention");
  EXPECT_EQ(answer["problems"][0]["gpu"], "gpu0");
  EXPECT_EQ(answer["problems"][1]["kind"], "gpu_foreign");
  EXPECT_EQ(answer["problems"][2]["kind"], "idle_with_work");
  EXPECT_EQ(answer["daemon"]["pid"], 42);
}

TEST_F(Check, AStoreThatRefusesWritesIsAProblem) {
  Json health = healthy();
  health["store_error"] = nullptr;
  EXPECT_EQ(check(health), kExitOk) << out();
  process_.out.str("");
  health["store_error"] = Json::parse(
      R"({"since_ms": 1, "for_ms": 90000, "failures": 7, "error": "database or disk is full"})");
  EXPECT_EQ(check(health), kExitFailed);
  EXPECT_EQ(out(),
            "the store refuses writes for 1m30s (7 failed commits; latest: database or disk is "
            "full); no job starts until it takes them again: free space on the disk of the "
            "daemon's home, then see its log\n");
  process_.out.str("");
  EXPECT_EQ(check(health, {"--json"}), kExitFailed);
  Json answer = Json::parse(out());
  ASSERT_EQ(answer["problems"].size(), 1u);
  EXPECT_EQ(answer["problems"][0]["kind"], "store_error");
  EXPECT_EQ(answer["problems"][0]["failures"], 7);
}

TEST_F(Check, UnreachableIsItsOwnStatus) {
  EXPECT_EQ(run({"check"}), kExitNoDaemon);  // no handler: the socket is not there
  EXPECT_EQ(out().rfind("daemon unreachable: no daemon is running", 0), 0u) << out();
  process_.out.str("");
  script({{"/v1/health", fail(Code::kIoError, "no answer within 10s")}});
  EXPECT_EQ(run({"check", "--json"}), kExitNoDaemon);
  Json answer = Json::parse(out());
  EXPECT_EQ(answer["ok"], false);
  EXPECT_EQ(answer["problems"][0]["kind"], "unreachable");
}

TEST_F(Check, SubmitWatcherFlagsMapToTheirFields) {
  script({{"/v1/jobs", json_answer(201, R"({"id": 7, "state": "pending", "runs": []})")}});
  EXPECT_EQ(run({"submit", "--requires-warn", "2h", "--quiet", "0s", "--warn-after", "90m", "--",
                 "true"}),
            0)
      << err();
  Json body = sent_body();
  EXPECT_EQ(body["requires_warn"], "2h");
  EXPECT_EQ(body["quiet"], "0s");
  EXPECT_EQ(body["warn_after"], "90m");
  expect_usage_error({"submit", "--quiet", "soon", "--", "true"}, "--quiet");
}

TEST_F(Check, ShowSaysAJobsOwnWatcherLimits) {
  script({{"/v1/jobs/7", json_answer(200, R"({"id": 7, "name": null, "state": "running",
      "priority": 50, "gpus_requested": 1, "reason": "", "submitted_at_ms": 1795949700000,
      "command": "train.sh", "cwd": "/x", "runs": [], "requires_warn_ms": null,
      "quiet_ms": 1200000, "warn_after_ms": 21600000})")}});
  EXPECT_EQ(run({"show", "7"}), 0) << err();
  EXPECT_NE(out().find("watch:      quiet 20m00s, warn after 6h00m\n"), std::string::npos) << out();
}

TEST_F(Check, StatusListsLastingWaits) {
  script({{"/v1/status?pending_limit=100&held_limit=100&arrays=collapse", json_answer(200, R"j({"gpu_mode": "fake", "resources": [],
      "lanes": [], "jobs": [], "watch": [
        {"kind": "queue.idle_with_work", "job": null, "for_ms": 720000,
         "detail": {"why": "1 GPU(s) free while 2 job(s) wait"}},
        {"kind": "resource.attention", "job": null, "for_ms": 5000, "detail": {"why": "x"}},
        {"kind": "job.quiet", "job": 4, "for_ms": 1500000,
         "detail": {"why": "its log has not grown for 25m00s (limit 20m00s)"}}]})j")}});
  EXPECT_EQ(run({"status"}), 0) << err();
  EXPECT_NE(out().find("WATCH                 JOB  FOR     WHY\n"
                       "queue.idle_with_work  -    12m00s  1 GPU(s) free while 2 job(s) wait\n"
                       "job.quiet             4    25m00s  its log has not grown for 25m00s (limit "
                       "20m00s)\n"),
            std::string::npos)
      << out();
  EXPECT_EQ(out().find("resource.attention"), std::string::npos) << out();
}

TEST_F(Check, BadFlagsSendNothing) {
  expect_usage_error({"check", "--timeout", "soon"}, "--timeout: ");
  expect_usage_error({"check", "--max-wait", "0s"}, "--max-wait must be longer than 0s");
}

}  // namespace
}  // namespace gpuq::cli
