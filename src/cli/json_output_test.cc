// SPDX-License-Identifier: Apache-2.0
// `--json` on the commands that act on jobs (cancel, hold, release, retry, move, drain,
// undrain, wait) against a scripted daemon: stdout holds exactly the daemon's answers, in one
// documented shape, and the exit statuses are those of the human output.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cli/commands.h"
#include "cli/fake_transport.h"

namespace gpuq::cli {
namespace {

using testing::json_answer;

class JsonOutput : public testing::ScriptedCli {
 protected:
  // stdout as JSON; fails the test unless it is exactly one document on one line.
  Json printed() const {
    std::string text = out();
    EXPECT_TRUE(text.ends_with("\n")) << text;
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
    return Json::parse(text, nullptr, false);
  }
};

std::string job(int id, std::string_view state) {
  return fmt::format(R"({{"id":{},"name":null,"state":"{}","priority":50,"reason":""}})", id,
                     state);
}

// The JSON array of these answers, as --json prints them.
Json array_of(std::initializer_list<std::string> bodies) {
  Json out = Json::array();
  for (const auto& body : bodies) out.push_back(Json::parse(body));
  return out;
}

constexpr std::string_view kConflict =
    R"({"error":{"code":"conflict","message":"job 8 already succeeded"}})";

TEST_F(JsonOutput, CancelPrintsOneArrayOfAnswersInTheOrderGiven) {
  script({{"/v1/jobs/7/cancel", json_answer(200, job(7, "cancelled"))},
          {"/v1/jobs/8/cancel", json_answer(409, std::string(kConflict))},
          {"/v1/jobs/9/cancel", json_answer(200, job(9, "cancelled"))}});
  EXPECT_EQ(run({"cancel", "--json", "7", "8", "9"}), kExitFailed);
  EXPECT_EQ(printed(), array_of({job(7, "cancelled"),
                                 R"({"ref":"8","error":{"code":"conflict",)"
                                 R"("message":"job 8 already succeeded"}})",
                                 job(9, "cancelled")}));
  EXPECT_EQ(err(), "gpuq: cannot cancel job 8: job 8 already succeeded\n");
}

// hold, release and retry share cancel's shape: an array even for one job, so a script's
// `jq '.[0].state'` does not depend on how many jobs were named.
TEST_F(JsonOutput, HoldReleaseAndRetryPrintAnArrayEvenForOneJob) {
  struct Case {
    const char* command;
    const char* state;
  };
  for (Case c : {Case{"hold", "held"}, Case{"release", "pending"}, Case{"retry", "pending"}}) {
    SCOPED_TRACE(c.command);
    process_.out.str("");
    script({{fmt::format("/v1/jobs/train%20a/{}", c.command), json_answer(200, job(4, c.state))}});
    EXPECT_EQ(run({c.command, "train a", "--json"}), kExitOk);
    EXPECT_EQ(printed(), array_of({job(4, c.state)}));
    EXPECT_EQ(err(), "");
    EXPECT_TRUE(steps_.empty());
  }
}

TEST_F(JsonOutput, ReleaseAttentionPrintsEachGpusAnswer) {
  script({{"/v1/gpus/gpu1/release", json_answer(200, R"({"gpu":"gpu1","state":"released"})")},
          {"/v1/gpus/3/release",
           json_answer(409,
                       R"({"error":{"code":"conflict","message":"gpu3 is not in attention"}})")}});
  EXPECT_EQ(run({"release", "--attention", "gpu1", "--attention", "3", "--json"}), kExitFailed);
  EXPECT_EQ(printed(), Json::parse(R"([{"gpu":"gpu1","state":"released"},)"
                                   R"({"ref":"3","error":{"code":"conflict",)"
                                   R"("message":"gpu3 is not in attention"}}])"));
  EXPECT_EQ(sent_body(0), Json::parse(R"({"attention":true})"));
  EXPECT_EQ(err(), "gpuq: cannot release 3: gpu3 is not in attention\n");
}

// A failure that is not the daemon's JSON error has no code to report.
TEST_F(JsonOutput, AnErrorWithoutTheDaemonsCodeHasANullCode) {
  script({{"/v1/jobs/7/hold", json_answer(502, "bad gateway")}});
  EXPECT_EQ(run({"hold", "7", "--json"}), kExitFailed);
  EXPECT_EQ(printed(), Json::parse(R"([{"ref":"7","error":{"code":null,)"
                                   R"("message":"the daemon answered HTTP 502: bad gateway"}}])"));
}

TEST_F(JsonOutput, NoDaemonPrintsNothingAndExitsThree) {
  process_.daemon.handler = nullptr;
  EXPECT_EQ(run({"cancel", "7", "--json"}), kExitNoDaemon);
  EXPECT_EQ(out(), "");
  EXPECT_TRUE(err().starts_with("gpuq: no daemon is running")) << err();
}

// The jobs acted on before the daemon went away are still reported, so a script knows them.
TEST_F(JsonOutput, ADaemonThatGoesAwayLeavesTheAnswersBeforeIt) {
  script({{"/v1/jobs/7/retry", json_answer(200, job(7, "pending"))},
          {"/v1/jobs/8/retry", fail(Code::kUnavailable, "no socket at /s")}});
  EXPECT_EQ(run({"retry", "7", "8", "9", "--json"}), kExitNoDaemon);
  EXPECT_EQ(printed(), array_of({job(7, "pending")}));
}

TEST_F(JsonOutput, MovePrintsTheJob) {
  std::string moved = R"({"id":7,"priority":10,"state":"pending"})";
  script({{"/v1/jobs/7/move", json_answer(200, moved)}});
  EXPECT_EQ(run({"move", "7", "--top", "--json"}), kExitOk);
  EXPECT_EQ(out(), moved + "\n");  // the daemon's key order
  EXPECT_EQ(sent_body(0), Json::parse(R"({"top":true})"));

  process_.out.str("");
  script({{"/v1/jobs/7/move",
           json_answer(409, R"({"error":{"code":"conflict","message":"job 7 is running"}})")}});
  EXPECT_EQ(run({"move", "7", "--top", "--json"}), kExitFailed);
  EXPECT_EQ(out(), "");
  EXPECT_EQ(err(), "gpuq: cannot move job 7: job 7 is running\n");
}

TEST_F(JsonOutput, DrainAndUndrainPrintTheDaemonsAnswer) {
  script({{"/v1/drain", json_answer(200, R"({"draining":true})")},
          {"/v1/undrain", json_answer(200, R"({"draining":false})")}});
  EXPECT_EQ(run({"drain", "--json"}), kExitOk);
  EXPECT_EQ(out(), "{\"draining\":true}\n");
  process_.out.str("");
  EXPECT_EQ(run({"undrain", "--json"}), kExitOk);
  EXPECT_EQ(out(), "{\"draining\":false}\n");
}

TEST_F(JsonOutput, WaitPrintsTheFinalStateOfEachJob) {
  script({{"/v1/events?after=0&limit=0", json_answer(200, R"({"events":[],"last_seq":41})")},
          {"/v1/jobs/7", json_answer(200, job(7, "running"))},
          {"/v1/jobs/8", json_answer(200, job(8, "succeeded"))},
          {"/v1/events?after=41&wait_ms=30000",
           json_answer(200,
                       R"({"events":[{"seq":42,"kind":"job.succeeded","job":7}],"last_seq":42})")},
          {"/v1/jobs/7", json_answer(200, job(7, "succeeded"))}});
  EXPECT_EQ(run({"wait", "7", "8", "--json"}), kExitOk);
  EXPECT_EQ(printed(), array_of({job(7, "succeeded"), job(8, "succeeded")}));
  EXPECT_EQ(err(), "");
}

TEST_F(JsonOutput, WaitKeepsExitOneWhenAJobFailed) {
  script({{"/v1/events?after=0&limit=0", json_answer(200, R"({"events":[],"last_seq":3})")},
          {"/v1/jobs/a", json_answer(200, job(7, "failed"))},
          {"/v1/jobs/b", json_answer(200, job(8, "succeeded"))}});
  EXPECT_EQ(run({"wait", "a", "b", "--json"}), kExitFailed);
  EXPECT_EQ(printed(), array_of({job(7, "failed"), job(8, "succeeded")}));
  EXPECT_EQ(err(), "gpuq: job 7 failed\n");
}

TEST_F(JsonOutput, WaitOnTimeoutPrintsTheCurrentStatesAndExits124) {
  script({{"/v1/events?after=0&limit=0", json_answer(200, R"({"events":[],"last_seq":0})")},
          {"/v1/jobs/7", json_answer(200, job(7, "pending"))},
          {"/v1/jobs/8", json_answer(200, job(8, "succeeded"))}});
  auto handler = process_.daemon.handler;
  process_.daemon.handler = [&](const HttpRequest& request) -> Result<HttpResponse> {
    if (request.target.find("wait_ms=") == std::string::npos) return handler(request);
    process_.steady += 5000;  // the long-poll waited its whole time
    return json_answer(200, R"({"events":[],"last_seq":0})");
  };
  EXPECT_EQ(run({"wait", "7", "8", "--timeout", "5s", "--json"}), kExitTimeout);
  EXPECT_EQ(printed(), array_of({job(7, "pending"), job(8, "succeeded")}));
  EXPECT_EQ(err(), "gpuq: timed out after 5s; still unfinished: job 7 pending\n");
}

// A name no job has that names an array is acted on as one request; its elements are each an
// answer, as if named one by one, and an element it refused is an error in the same list.
TEST_F(JsonOutput, RetryOfAnArrayIsOneRequestAndListsEachElement) {
  constexpr std::string_view kNoJob = R"({"error":{"code":"not_found","message":"no job named 'four'"}})";
  std::string acted = fmt::format(
      R"({{"array":{{"id":1,"name":"four"}},"jobs":[{},{}],)"
      R"("refused":[{{"id":4,"error":"job 4 stays blocked: job 9 failed"}}]}})",
      job(2, "pending"), job(3, "pending"));
  script({{"/v1/jobs/four/retry", json_answer(404, std::string(kNoJob))},
          {"/v1/arrays/four/retry", json_answer(200, acted)}});
  EXPECT_EQ(run({"retry", "four", "--failed", "--json"}), kExitFailed);
  EXPECT_EQ(sent_body(1), Json({{"failed", true}})) << "--failed: the failed elements only";
  EXPECT_EQ(printed(), array_of({job(2, "pending"), job(3, "pending"),
                                 R"({"ref":"4","error":{"code":"conflict",)"
                                 R"("message":"job 4 stays blocked: job 9 failed"}})"}));
  EXPECT_EQ(err(), "gpuq: cannot retry job 4: job 4 stays blocked: job 9 failed\n");

  // Without --json: a line per element; an array that refuses says so by its name.
  process_.out.str("");
  process_.err.str("");
  constexpr std::string_view kNone =
      R"({"error":{"code":"conflict","message":"array four has no element to hold: none is pending"}})";
  script({{"/v1/jobs/four/hold", json_answer(404, std::string(kNoJob))},
          {"/v1/arrays/four/hold", json_answer(409, std::string(kNone))},
          {"/v1/jobs/four/hold", json_answer(404, std::string(kNoJob))},
          {"/v1/arrays/four/hold", json_answer(200, acted)}});
  EXPECT_EQ(run({"hold", "four", "four"}), kExitFailed);
  EXPECT_EQ(out(), "held job 2\nheld job 3\n");
  EXPECT_EQ(err(),
            "gpuq: cannot hold array four: array four has no element to hold: none is pending\n"
            "gpuq: cannot hold job 4: job 4 stays blocked: job 9 failed\n");
}

// Without --json an array's action asks for the elements' ids only ({"brief": true}: a million
// jobs need not travel), and prints a line per id as before; with --json it asks for the jobs.
// A daemon that does not know "brief" (400) is asked again without it.
TEST_F(JsonOutput, AnArraysActionWithoutJsonAsksForTheIdsOnly) {
  constexpr std::string_view kNoJob = R"({"error":{"code":"not_found","message":"no job named 'four'"}})";
  script({{"/v1/jobs/four/cancel", json_answer(404, std::string(kNoJob))},
          {"/v1/arrays/four/cancel", json_answer(200, R"({"array":{"id":1,"name":"four"},"ids":[2,3],"refused":[]})")}});
  EXPECT_EQ(run({"cancel", "four"}), kExitOk) << err();
  EXPECT_EQ(sent_body(1), Json({{"brief", true}}));
  EXPECT_EQ(out(), "cancelled job 2\ncancelled job 3\n");

  // A cancel the store cannot record yet (202) says so for each element.
  process_.out.str("");
  process_.daemon.requests.clear();
  script({{"/v1/jobs/four/cancel", json_answer(404, std::string(kNoJob))},
          {"/v1/arrays/four/cancel",
           json_answer(202, R"({"array":{"id":1,"name":"four"},"ids":[2],"refused":[],"cancel":"requested",)"
                            R"("note":"the store cannot be written now"})")}});
  EXPECT_EQ(run({"cancel", "four"}), kExitOk) << err();
  EXPECT_EQ(out(), "cancel of job 2 requested: the store cannot be written now\n");

  // An older daemon refuses the field: the same request again, without it.
  process_.out.str("");
  process_.daemon.requests.clear();
  constexpr std::string_view kUnknown =
      R"({"error":{"code":"invalid_argument","message":"unknown field 'brief'; send {} or no body"}})";
  script({{"/v1/jobs/four/hold", json_answer(404, std::string(kNoJob))},
          {"/v1/arrays/four/hold", json_answer(400, std::string(kUnknown))},
          {"/v1/arrays/four/hold", json_answer(200, fmt::format(R"({{"array":{{"id":1,"name":"four"}},"jobs":[{}],"refused":[]}})",
                                                                job(2, "held")))}});
  EXPECT_EQ(run({"hold", "four"}), kExitOk) << err();
  EXPECT_EQ(sent_body(1), Json({{"brief", true}}));
  EXPECT_EQ(sent_body(2), Json::object());
  EXPECT_EQ(out(), "held job 2\n");
  EXPECT_EQ(err(), "");

  // --json: the jobs, as the API answers them by default.
  process_.out.str("");
  process_.daemon.requests.clear();
  script({{"/v1/jobs/four/cancel", json_answer(404, std::string(kNoJob))},
          {"/v1/arrays/four/cancel", json_answer(200, fmt::format(R"({{"array":{{"id":1,"name":"four"}},"jobs":[{}],"refused":[]}})",
                                                                  job(2, "cancelled")))}});
  EXPECT_EQ(run({"cancel", "four", "--json"}), kExitOk) << err();
  EXPECT_EQ(sent_body(1), Json::object());
  EXPECT_EQ(printed(), array_of({job(2, "cancelled")}));
}

// An array's wait reads its elements from the array's one summary, not one request each: an
// element is read whole when an event names it, when it ended other than succeeded (for its
// reason), and, with --json, at the end (whole jobs are printed).
TEST_F(JsonOutput, WaitOnAnArrayReadsItsSummaryNotEachElement) {
  constexpr std::string_view kNoJob = R"({"error":{"code":"not_found","message":"no job named 'four'"}})";
  constexpr std::string_view kSummary =
      R"({"array":{"id":1,"name":"four"},"counts":{},"jobs":[)"
      R"({"id":2,"name":"four[0]","state":"succeeded","runs":1,"exit_code":0,"signal":null},)"
      R"({"id":3,"name":"four[1]","state":"failed","runs":1,"exit_code":3,"signal":null},)"
      R"({"id":4,"name":"four[2]","state":"running","runs":1,"exit_code":null,"signal":null},)"
      R"({"id":5,"name":"four[3]","state":"succeeded","runs":1,"exit_code":0,"signal":null}]})";
  auto named = [](int id, std::string_view name, std::string_view state, std::string_view reason) {
    return fmt::format(R"({{"id":{},"name":"{}","state":"{}","priority":50,"reason":"{}"}})", id, name, state,
                       reason);
  };
  // The cursor, the array's summary, and the event that ends four[2], which is read whole.
  auto until_the_end = [&](std::vector<std::pair<std::string, Result<HttpResponse>>> then) {
    std::vector<std::pair<std::string, Result<HttpResponse>>> steps = {
        {"/v1/events?after=0&limit=0", json_answer(200, R"({"events":[],"last_seq":9})")},
        {"/v1/jobs/four", json_answer(404, std::string(kNoJob))},
        {"/v1/arrays/four", json_answer(200, std::string(kSummary))},
        {"/v1/events?after=9&wait_ms=30000",
         json_answer(200, R"({"events":[{"seq":10,"kind":"job.succeeded","job":4}],"last_seq":10})")},
        {"/v1/jobs/4", json_answer(200, named(4, "four[2]", "succeeded", ""))}};
    steps.insert(steps.end(), then.begin(), then.end());
    script(std::move(steps));
  };
  until_the_end({{"/v1/jobs/3", json_answer(200, named(3, "four[1]", "failed", "exit code 3"))}});
  EXPECT_EQ(run({"wait", "four"}), kExitFailed);
  EXPECT_EQ(process_.daemon.requests.size(), 6u) << "no request for the elements that ended well";
  EXPECT_EQ(out(), "");
  EXPECT_EQ(err(), "gpuq: job 3 (four[1]) failed: exit code 3\n");

  // --json: every element whole, in the array's order.
  process_.err.str("");
  process_.daemon.requests.clear();
  until_the_end({{"/v1/jobs/2", json_answer(200, named(2, "four[0]", "succeeded", ""))},
                 {"/v1/jobs/3", json_answer(200, named(3, "four[1]", "failed", "exit code 3"))},
                 {"/v1/jobs/5", json_answer(200, named(5, "four[3]", "succeeded", ""))}});
  EXPECT_EQ(run({"wait", "four", "--json"}), kExitFailed);
  EXPECT_EQ(printed(), array_of({named(2, "four[0]", "succeeded", ""), named(3, "four[1]", "failed", "exit code 3"),
                                 named(4, "four[2]", "succeeded", ""), named(5, "four[3]", "succeeded", "")}));
}

// An element the summary showed failed but that was retried before it was read whole is not
// done: the wait goes on until it ends, and a pruned element keeps its summary line.
TEST_F(JsonOutput, WaitOnAnArrayGoesOnForAnElementRetriedMeanwhile) {
  constexpr std::string_view kNoJob = R"({"error":{"code":"not_found","message":"no job named 'two'"}})";
  constexpr std::string_view kSummary =
      R"({"array":{"id":1,"name":"two"},"counts":{},"jobs":[)"
      R"({"id":2,"name":"two[0]","state":"cancelled","runs":0,"exit_code":null,"signal":null},)"
      R"({"id":3,"name":"two[1]","state":"failed","runs":1,"exit_code":3,"signal":null}]})";
  script({{"/v1/events?after=0&limit=0", json_answer(200, R"({"events":[],"last_seq":9})")},
          {"/v1/jobs/two", json_answer(404, std::string(kNoJob))},
          {"/v1/arrays/two", json_answer(200, std::string(kSummary))},
          {"/v1/jobs/2", json_answer(404, R"({"error":{"code":"not_found","message":"no job 2"}})")},
          {"/v1/jobs/3", json_answer(200, R"({"id":3,"name":"two[1]","state":"pending","reason":""})")},
          {"/v1/events?after=9&wait_ms=30000",
           json_answer(200, R"({"events":[{"seq":10,"kind":"job.succeeded","job":3}],"last_seq":10})")},
          {"/v1/jobs/3", json_answer(200, R"({"id":3,"name":"two[1]","state":"succeeded","reason":""})")}});
  EXPECT_EQ(run({"wait", "two"}), kExitFailed) << "two[0] was cancelled";
  EXPECT_EQ(err(), "gpuq: job 2 (two[0]) cancelled\n") << "pruned since: its summary line stands";
  EXPECT_EQ(process_.daemon.requests.size(), 7u);
}

// A job the daemon does not know ends the wait at once: there is no state to print.
TEST_F(JsonOutput, WaitOnAnUnknownJobPrintsNothing) {
  script({{"/v1/events?after=0&limit=0", json_answer(200, R"({"events":[],"last_seq":0})")},
          {"/v1/jobs/nope",
           json_answer(404, R"({"error":{"code":"not_found","message":"no job named 'nope'"}})")},
          // No job: is it an array (docs/sweeps.md)? No: the job's error is the one to say.
          {"/v1/arrays/nope",
           json_answer(404, R"({"error":{"code":"not_found","message":"no array named 'nope'"}})")}});
  EXPECT_EQ(run({"wait", "nope", "--json"}), kExitFailed);
  EXPECT_EQ(out(), "");
  EXPECT_EQ(err(), "gpuq: job nope: no job named 'nope'\n");
}

}  // namespace
}  // namespace gpuq::cli
