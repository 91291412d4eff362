// SPDX-License-Identifier: Apache-2.0
// The HTTP answer codes of the endpoints (docs/api.md, "Endpoints"), on the wire of a real
// daemon: what a script that uses the API directly relies on, and the CLI only sees as success
// or failure. The daemon drains first, so no job starts and every state is the one set here.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness.h"
#include "unix_http.h"

namespace gpuq::testing {
namespace {

using nlohmann::json;

class ApiCodes : public ::testing::Test {
 protected:
  void SetUp() override {
    h_.start();
    ASSERT_EQ(post("/v1/drain", "{}").status, 200);
  }

  HttpAnswer post(const std::string& path, const std::string& body) const {
    return unix_post(h_.home() + "/gpuq.sock", path, body);
  }
  HttpAnswer get(const std::string& path) const { return unix_get(h_.home() + "/gpuq.sock", path); }

  // A submit request for `argv` in the work directory.
  std::string job(const std::string& name, const std::string& command) const {
    return json{{"name", name}, {"argv", {"sh", "-c", command}}, {"cwd", h_.work()}}.dump();
  }

  // The status and, for an error, its code, e.g. "409 conflict"; "200" for a success.
  static std::string code(const HttpAnswer& a) {
    json body = json::parse(a.body, nullptr, false);
    if (a.status < 400 || !body.is_object() || !body.contains("error"))
      return std::to_string(a.status);
    return std::to_string(a.status) + " " + body["error"].value("code", "?");
  }

  Harness h_{"fake:2"};
};

TEST_F(ApiCodes, SubmitAnswers201ThenTheSameJobWith200AndAConflictWith409) {
  HttpAnswer first = post("/v1/jobs", job("a", "true"));
  ASSERT_EQ(code(first), "201") << first.body;
  HttpAnswer again = post("/v1/jobs", job("a", "true"));
  ASSERT_EQ(code(again), "200") << again.body;
  EXPECT_EQ(json::parse(again.body)["id"], json::parse(first.body)["id"]);
  EXPECT_EQ(code(post("/v1/jobs", job("a", "false"))), "409 conflict");
  EXPECT_EQ(code(post("/v1/jobs", "{not json")), "400 invalid_argument");
  EXPECT_EQ(code(post("/v1/jobs", R"({"argv":["true"],"cwd":"relative"})")),
            "400 invalid_argument");
  EXPECT_EQ(code(get("/v1/jobs/nope")), "404 not_found");
  EXPECT_EQ(code(get("/v1/jobs/999")), "404 not_found");
  EXPECT_EQ(code(get("/v1/nothing")), "404 not_found");
  EXPECT_EQ(h_.gpuq_json({"status", "--json"})["jobs"].size(), 1u);  // nothing more was queued
}

TEST_F(ApiCodes, ControlsAnswer409ForAStateTheyDoNotApplyTo) {
  ASSERT_EQ(code(post("/v1/jobs", job("a", "true"))), "201");
  EXPECT_EQ(code(post("/v1/jobs/a/hold", "{}")), "200");
  EXPECT_EQ(code(post("/v1/jobs/a/hold", "{}")), "200");  // already held
  EXPECT_EQ(code(post("/v1/jobs/a/release", "{}")), "200");
  EXPECT_EQ(code(post("/v1/jobs/a/release", "{}")), "409 conflict");  // pending, not held
  EXPECT_EQ(code(post("/v1/jobs/a/retry", "{}")), "409 conflict");    // nothing to retry
  EXPECT_EQ(code(post("/v1/jobs/a/move", R"({"top":true})")), "200");
  EXPECT_EQ(code(post("/v1/jobs/a/move", R"({"sideways":1})")), "400 invalid_argument");
  EXPECT_EQ(code(post("/v1/jobs/a/move", R"({"before":"nope"})")), "404 not_found");
  EXPECT_EQ(code(post("/v1/jobs/nope/cancel", "{}")), "404 not_found");
  EXPECT_EQ(code(post("/v1/jobs/a/cancel", "{}")), "200");
  EXPECT_EQ(code(post("/v1/jobs/a/cancel", "{}")), "409 conflict");             // already cancelled
  EXPECT_EQ(code(post("/v1/jobs/a/move", R"({"top":true})")), "409 conflict");  // not waiting
  EXPECT_EQ(code(post("/v1/jobs/a/retry", "{}")), "200");
  EXPECT_EQ(code(post("/v1/drain", "{}")), "200");  // already draining
  EXPECT_EQ(code(post("/v1/gpus/gpu0/release", R"({"attention":true})")), "409 conflict");
  EXPECT_EQ(code(post("/v1/gpus/gpu9/release", R"({"attention":true})")), "404 not_found");
  EXPECT_EQ(code(post("/v1/gpus/gpu0/release", "{}")), "400 invalid_argument");
}

TEST_F(ApiCodes, AJobOrARunThatDoesNotExistIs404AndAReleasedJobSaysWhyItWaits) {
  for (const char* verb : {"hold", "release", "retry", "cancel"})
    EXPECT_EQ(code(post(std::string("/v1/jobs/999/") + verb, "{}")), "404 not_found") << verb;
  EXPECT_EQ(code(post("/v1/jobs/999/move", R"({"top":true})")), "404 not_found");  // was 409
  ASSERT_EQ(code(post("/v1/jobs", job("a", "true"))), "201");
  EXPECT_EQ(code(get("/v1/jobs/a/log?run=3")), "404 not_found");  // was 200 and no text
  EXPECT_EQ(code(get("/v1/jobs/a/log")), "200");
  ASSERT_EQ(code(post("/v1/jobs/a/hold", "{}")), "200");
  HttpAnswer released = post("/v1/jobs/a/release", "{}");
  ASSERT_EQ(code(released), "200");
  EXPECT_NE(json::parse(released.body)["reason"], "") << released.body;  // was empty
}

TEST_F(ApiCodes, PlansAnswer200AndAChangedJobWith409) {
  auto plan = [&](const std::string& command) {
    return json{{"jobs", json::array({json::parse(job("p1", command))})}}.dump();
  };
  HttpAnswer created = post("/v1/plans", plan("true"));
  ASSERT_EQ(code(created), "200") << created.body;
  EXPECT_EQ(json::parse(created.body)["jobs"][0]["result"], "created");
  HttpAnswer existing = post("/v1/plans", plan("true"));
  ASSERT_EQ(code(existing), "200") << existing.body;
  EXPECT_EQ(json::parse(existing.body)["jobs"][0]["result"], "existing");
  EXPECT_EQ(code(post("/v1/plans", plan("false"))), "409 conflict");
  EXPECT_EQ(code(post("/v1/plans", R"({"jobs":[]})")), "400 invalid_argument");
}

TEST_F(ApiCodes, StatusActiveListsOnlyUnfinishedJobs) {
  ASSERT_EQ(code(post("/v1/jobs", job("waits", "true"))), "201");
  ASSERT_EQ(code(post("/v1/jobs", job("gone", "true"))), "201");
  ASSERT_EQ(code(post("/v1/jobs/gone/cancel", "{}")), "200");
  auto names = [&](const std::string& path) {
    HttpAnswer a = get(path);
    EXPECT_EQ(a.status, 200) << a.body;
    json body = json::parse(a.body);
    std::vector<std::string> out;
    for (const auto& j : body["jobs"]) out.push_back(j["name"].get<std::string>());
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(names("/v1/status?active=1"), std::vector<std::string>{"waits"});
  EXPECT_EQ(names("/v1/status"), (std::vector<std::string>{"gone", "waits"}));
  EXPECT_EQ(json::parse(get("/v1/status?active=1").body)["draining"], true);
}

TEST_F(ApiCodes, AWorkingDirectoryThatDoesNotExistIsRefusedBeforeAnythingIsQueued) {
  std::string missing = h_.work() + "/not-made-yet";
  HttpAnswer refused = post("/v1/jobs", json{{"argv", {"true"}}, {"cwd", missing}}.dump());
  EXPECT_EQ(code(refused), "400 invalid_argument");
  EXPECT_NE(refused.body.find("the working directory " + missing + " does not exist"), std::string::npos)
      << refused.body;
  json plan = {{"jobs", json::array({json::parse(job("p1", "true")),
                                     json{{"name", "p2"}, {"argv", {"true"}}, {"cwd", missing}}})}};
  HttpAnswer plan_refused = post("/v1/plans", plan.dump());
  EXPECT_EQ(code(plan_refused), "400 invalid_argument");
  EXPECT_NE(plan_refused.body.find("job 'p2': the working directory"), std::string::npos) << plan_refused.body;
  EXPECT_EQ(h_.gpuq_json({"status", "--json"})["jobs"].size(), 0u) << "nothing was queued";
}

TEST_F(ApiCodes, GcAnswersWhatItRemovedAndRefusesABadBody) {
  HttpAnswer dry = post("/v1/gc", R"({"dry_run":true})");
  ASSERT_EQ(code(dry), "200") << dry.body;
  json report = json::parse(dry.body);
  EXPECT_EQ(report["dry_run"], true);
  EXPECT_EQ(report["keep"], "30d");  // the default [retention] keep
  for (const char* key : {"cutoff", "jobs", "job_ids", "runs", "events", "run_dirs", "bytes",
                          "kept_for_dependents"}) {
    EXPECT_TRUE(report.contains(key)) << key;
  }
  EXPECT_EQ(code(post("/v1/gc", R"({"dry_run":"yes"})")), "400 invalid_argument");
  EXPECT_EQ(code(post("/v1/gc", R"({"everything":true})")), "400 invalid_argument");
  EXPECT_EQ(code(post("/v1/gc", "")), "200");
}

// The timeline's and the report's windows: a bad one is 400 with a message naming the query
// parameter. Before, from_ms=-9e18&to_ms=9e18 overflowed `to_ms - from_ms` to a negative
// length, passed the 90-day cap and was answered 200 over every run in the store.
TEST_F(ApiCodes, TimelineAndReportRefuseAWindowTheyCannotRead) {
  auto message = [](const HttpAnswer& a) {
    json body = json::parse(a.body, nullptr, false);
    return body.is_object() && body.contains("error") ? body["error"].value("message", "") : a.body;
  };
  HttpAnswer huge = get("/v1/timeline?from_ms=-9000000000000000000&to_ms=9000000000000000000");
  EXPECT_EQ(code(huge), "400 invalid_argument") << huge.body;
  EXPECT_EQ(message(huge),
            "query parameter 'to_ms' must be a whole number from 0 to 4102444800000, not "
            "'9000000000000000000'");
  HttpAnswer before = get("/v1/timeline?to_ms=-9223372036854775808");
  EXPECT_EQ(code(before), "400 invalid_argument") << before.body;
  EXPECT_EQ(code(get("/v1/timeline")), "200");
  HttpAnswer by = get("/v1/report?by=team");
  EXPECT_EQ(code(by), "400 invalid_argument") << by.body;
  EXPECT_EQ(message(by), "query parameter 'by' must be user, name, outcome or gpu, not 'team'");
  EXPECT_EQ(code(get("/v1/report?since=91d")), "400 invalid_argument");
  EXPECT_EQ(code(get("/v1/report?since=30d&by=gpu")), "200");
}

TEST_F(ApiCodes, HealthSaysThePassAndThatTheStoreTakesWrites) {
  json health = json::parse(get("/v1/health").body);
  EXPECT_TRUE(health.contains("store_error"));
  EXPECT_TRUE(health["store_error"].is_null());
  ASSERT_TRUE(health["pass"].is_number_integer());
  EXPECT_GE(health["pass"].get<int64_t>(), 1);
  // The part of the pass spent starting runs is within the whole pass.
  ASSERT_TRUE(health["last_pass_us"].is_number_integer());
  ASSERT_TRUE(health["last_pass_starts_us"].is_number_integer());
  EXPECT_GE(health["last_pass_starts_us"].get<int64_t>(), 0);
  EXPECT_LE(health["last_pass_starts_us"].get<int64_t>(), health["last_pass_us"].get<int64_t>());
}

// The API version (docs/api.md, "Versions"): every answer says the daemon's, a client that says
// it speaks another is refused before its request is acted on, and one that says nothing (curl,
// the dashboard) is served.
TEST_F(ApiCodes, AClientOfAnotherApiVersionIsRefusedAndEveryAnswerSaysTheDaemons) {
  const std::string socket = h_.home() + "/gpuq.sock";
  HttpAnswer plain = get("/v1/health");
  EXPECT_EQ(plain.status, 200);
  EXPECT_EQ(plain.api_version, "1");
  EXPECT_EQ(unix_get(socket, "/v1/health", {"Gpuq-Api: 1"}).status, 200);

  HttpAnswer newer = unix_request(socket, "POST", "/v1/jobs", job("new", "true"), {"Gpuq-Api: 2"});
  EXPECT_EQ(code(newer), "400 api_version") << newer.body;
  EXPECT_EQ(newer.api_version, "1");
  EXPECT_EQ(json::parse(newer.body)["error"]["message"],
            "this gpuq daemon speaks API 1 and the client speaks API 2: use the gpuq that "
            "matches the daemon (`gpuq --version` prints its API), or restart the daemon with "
            "the client's gpuq");
  HttpAnswer garbled = unix_get(socket, "/v1/status", {"Gpuq-Api: latest"});
  EXPECT_EQ(code(garbled), "400 api_version") << garbled.body;
  EXPECT_NE(garbled.body.find("'latest' is not an API version"), std::string::npos) << garbled.body;
  EXPECT_EQ(h_.gpuq_json({"status", "--json"})["jobs"].size(), 0u);  // "new" was not queued
}

}  // namespace
}  // namespace gpuq::testing
