// SPDX-License-Identifier: Apache-2.0
// Client commands against a scripted daemon (FakeTransport): what they send and print.
#include "cli/commands.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <deque>
#include <filesystem>
#include <fstream>

#include "cli/app.h"
#include "cli/fake_transport.h"

namespace gpuq::cli {
namespace {

using testing::json_answer;

class Commands : public testing::ScriptedCli {
 protected:

};

std::string job_json(int id, std::string_view state, std::string_view extra = "",
                     std::string_view runs = "[]") {
  return fmt::format(R"({{"id":{},"name":null,"state":"{}","priority":50,"gpus_requested":1,)"
                     R"("reason":"","submitted_at_ms":1795949700000,"command":"train.sh",)"
                     R"("cwd":"/x","runs":{}{}}})",
                     id, state, runs, extra);
}

TEST(SubmitRequest, CarriesTheFilteredEnvironmentAndAbsoluteCwd) {
  namespace fs = std::filesystem;
  std::string base = fs::temp_directory_path().string();
  SubmitOptions options;
  options.name = "eval";
  options.gpus = 2;
  options.priority = "high";
  options.env = {"HF_HOME=/data/hf", "PATH=/opt/bin"};
  options.words = {"python", "eval.py"};
  options.command_mode = true;
  auto request = build_submit_request(options,
                                      {"PATH=/usr/bin", "CUDA_VISIBLE_DEVICES=0", "GPUQ_JOB_ID=3",
                                       "GPUQ_HOME=/h", "LANG=C.UTF-8", "EMPTY="},
                                      base, 0);
  ASSERT_TRUE(request) << request.error().message;
  EXPECT_EQ(json_text(*request),
            R"({"name":"eval","gpus":2,"priority":10,"cwd":")" + base +
                R"(","env":{"EMPTY":"","GPUQ_HOME":"/h","HF_HOME":"/data/hf","LANG":"C.UTF-8","PATH":"/opt/bin"},)"
                R"("argv":["python","eval.py"]})");
}

TEST(SubmitRequest, ReadsTheScriptAndKeepsItsArguments) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "gpuq-cli-submit-test";
  fs::create_directories(dir / "sub");
  std::ofstream(dir / "train.sh") << "#!/bin/bash\necho $1\n";
  SubmitOptions options;
  options.cwd = "sub/";
  options.words = {(dir / "train.sh").string(), "--lr", "3e-4"};
  auto request = build_submit_request(options, {}, dir.string(), 0);
  ASSERT_TRUE(request) << request.error().message;
  EXPECT_EQ((*request)["cwd"], (dir / "sub").string());
  EXPECT_FALSE(request->contains("gpus")) << "unsaid: the spec's 0 (1 in the GPU lane)";
  EXPECT_FALSE(request->contains("priority"));
  EXPECT_FALSE(request->contains("name"));
  EXPECT_FALSE(request->contains("argv"));
  EXPECT_EQ((*request)["script"]["name"], (dir / "train.sh").string());
  EXPECT_EQ((*request)["script"]["text"], "#!/bin/bash\necho $1\n");
  EXPECT_EQ((*request)["script"]["args"], Json::parse(R"(["--lr","3e-4"])"));
  fs::remove_all(dir);
}

TEST_F(Commands, SubmitPostsAndPrintsTheJob) {
  script({{"/v1/jobs", json_answer(201, R"({"id":7,"name":"eval","state":"pending"})")}});
  EXPECT_EQ(run({"submit", "--name", "eval", "--gpus", "1", "--", "python", "eval.py", "--x"}), 0);
  EXPECT_EQ(out(), "submitted job 7 (eval)\n");
  ASSERT_EQ(process_.daemon.requests.size(), 1u);
  const HttpRequest& sent = process_.daemon.requests[0];
  EXPECT_EQ(sent.method, Method::kPost);
  Json body = Json::parse(sent.body);
  EXPECT_EQ(body["argv"], Json::parse(R"(["python","eval.py","--x"])"));
  EXPECT_EQ(body["cwd"], "/tmp");
  EXPECT_EQ(body["env"]["HOME"], "/home/me");
}

TEST_F(Commands, SubmitJsonPrintsTheDaemonsJob) {
  script({{"/v1/jobs", json_answer(201, R"({"id":8,"name":null})")}});
  EXPECT_EQ(run({"submit", "--json", "--", "true"}), 0);
  EXPECT_EQ(out(), "{\"id\":8,\"name\":null}\n");
}

TEST_F(Commands, SubmitIdOnlyPrintsTheIdAlone) {
  script({{"/v1/jobs", json_answer(201, R"({"id":12,"name":"eval","state":"pending","array":null})")},
          {"/v1/jobs", json_answer(201, R"({"name":"eval","state":"pending"})")}});
  EXPECT_EQ(run({"submit", "--id-only", "--", "true"}), 0);
  EXPECT_EQ(out(), "12\n");
  EXPECT_EQ(run({"submit", "--id-only", "--", "true"}), kExitFailed);
  EXPECT_EQ(err(), "gpuq: the daemon's answer has no job id\n");
  EXPECT_NE(run({"submit", "--id-only", "--json", "--", "true"}), 0);
  EXPECT_EQ(process_.daemon.requests.size(), 2u);  // the refused command line sent nothing
}

TEST_F(Commands, DaemonErrorsPrintTheirMessageAndExitOne) {
  script(
      {{"/v1/jobs",
        json_answer(
            400,
            R"x({"error":{"code":"invalid_argument","message":"job asks for 3 GPUs; this machine has 2 (fake:2)"}})x")}});
  EXPECT_EQ(run({"submit", "--gpus", "3", "--", "true"}), kExitFailed);
  EXPECT_EQ(err(), "gpuq: job asks for 3 GPUs; this machine has 2 (fake:2)\n");
  EXPECT_EQ(out(), "");
}

TEST_F(Commands, UnreachableDaemonExitsThree) {
  process_.daemon.handler = nullptr;  // the fake answers "no socket"
  EXPECT_EQ(run({"status"}), kExitNoDaemon);
  EXPECT_EQ(err(),
            "gpuq: no daemon is running for /tmp/gpuq-fake-home (no socket at /fake/gpuq.sock). "
            "Start one with: gpuq daemon --detach --home /tmp/gpuq-fake-home\n");
}

TEST_F(Commands, StatusShowsActiveJobsAndTheLastTenFinished) {
  std::string jobs;
  for (int id = 1; id <= 13; ++id) {
    if (!jobs.empty()) jobs += ',';
    jobs += job_json(id, "succeeded",
                     fmt::format(R"(,"finished_at":"2026-11-29T10:{:02}:00.000Z")", id));
  }
  jobs += ',';
  jobs += job_json(14, "pending", R"(,"reason":"needs 1 GPU, 0 free")");
  std::string body =
      R"({"gpu_mode":"fake:1","resources":[{"name":"gpu0","index":0,"state":"busy","job":20,"model":"fake"}],"jobs":[)" +
      jobs + "]}";
  script({{"/v1/status?pending_limit=100&held_limit=100&arrays=collapse", json_answer(200, body)}});
  EXPECT_EQ(run({"status"}), 0);
  std::string text = out();
  EXPECT_NE(text.find("NAME  INDEX  STATE  JOB  MODEL  NOTE\ngpu0  0      busy   20   fake\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ID  NAME  STATE      PRI  GPUS  TIME  REASON/COMMAND\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("14  -     pending    50   1     36s   needs 1 GPU, 0 free\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("\n1   -"), std::string::npos) << text;  // the oldest finished are left out
  EXPECT_NE(text.find("\n4   -     succeeded"), std::string::npos) << text;
  EXPECT_TRUE(text.ends_with("3 more finished jobs (gpuq status --all)\n")) << text;

  process_.out.str("");
  script({{"/v1/status?finished=all&arrays=collapse", json_answer(200, body)}});
  EXPECT_EQ(run({"status", "--all"}), 0);
  EXPECT_NE(out().find("\n1   -"), std::string::npos) << out();
  EXPECT_EQ(out().find("more finished"), std::string::npos);
}

// The daemon lists only the latest finished jobs and says how many there are.
TEST_F(Commands, StatusCountsTheFinishedJobsTheDaemonLeftOut) {
  std::string jobs = job_json(3, "running");
  for (int id = 1195; id <= 1204; ++id) {
    jobs += "," + job_json(id, "failed", R"(,"finished_at":"2026-11-29T10:00:00.000Z")");
  }
  std::string body = R"({"resources":[],"jobs":[)" + jobs + R"(],"finished_total":1204})";
  script({{"/v1/status?pending_limit=100&held_limit=100&arrays=collapse", json_answer(200, body)}});
  EXPECT_EQ(run({"status"}), 0);
  EXPECT_NE(out().find("\n3     -     running"), std::string::npos) << out();
  EXPECT_NE(out().find("\n1195  -     failed"), std::string::npos) << out();
  EXPECT_TRUE(out().ends_with("\n1,194 more finished jobs (gpuq status --all)\n")) << out();

  process_.out.str("");
  body = R"({"resources":[],"jobs":[],"finished_total":0})";
  script({{"/v1/status?pending_limit=100&held_limit=100&arrays=collapse", json_answer(200, body)}});
  EXPECT_EQ(run({"status"}), 0);
  EXPECT_TRUE(out().ends_with("no jobs\n")) << out();
}

// A deep queue: the daemon sends the first pending jobs to be served and their total; the table
// lists those (by id, as always) and counts the rest. --all asks for every one.
TEST_F(Commands, StatusListsTheFirstPendingJobsAndCountsTheRest) {
  std::string jobs = job_json(3, "running") + "," + job_json(900, "pending") + "," + job_json(7, "pending");
  std::string body = R"({"resources":[],"jobs":[)" + jobs + R"(],"pending_total":1000000,"finished_total":0})";
  script({{"/v1/status?pending_limit=100&held_limit=100&arrays=collapse", json_answer(200, body)}});
  EXPECT_EQ(run({"status"}), 0);
  std::string text = out();
  size_t seven = text.find("\n7    -     pending"), nine_hundred = text.find("\n900  -     pending");
  EXPECT_NE(seven, std::string::npos) << text;
  EXPECT_LT(seven, nine_hundred) << text;
  EXPECT_TRUE(text.ends_with("\n999,998 more pending jobs: those above are the first 100 to be served "
                             "(gpuq status --all lists every one)\n"))
      << text;

  // Held and blocked jobs past the first 100 (the oldest), counted each; and only left-out
  // ones: not "no jobs".
  process_.out.str("");
  jobs = job_json(3, "running") + "," + job_json(4, "held") + "," + job_json(5, "blocked");
  body = R"({"resources":[],"jobs":[)" + jobs + R"(],"pending_total":0,"held_total":1250,"blocked_total":1,"finished_total":0})";
  script({{"/v1/status?pending_limit=100&held_limit=100&arrays=collapse", json_answer(200, body)}});
  EXPECT_EQ(run({"status"}), 0);
  EXPECT_NE(out().find("\n4   -     held"), std::string::npos) << out();
  EXPECT_TRUE(out().ends_with("\n1,249 more held jobs: those above are the oldest 100 (gpuq status --all "
                              "lists every one)\n"))
      << out();
  EXPECT_EQ(out().find("more blocked"), std::string::npos) << out();
  // An older daemon lists every held job and counts none: nothing is said to be left out.
  process_.out.str("");
  body = R"({"resources":[],"jobs":[)" + jobs + R"(],"pending_total":0,"finished_total":0})";
  script({{"/v1/status?pending_limit=100&held_limit=100&arrays=collapse", json_answer(200, body)}});
  EXPECT_EQ(run({"status"}), 0);
  EXPECT_NE(out().find("\n4   -     held"), std::string::npos) << out();
  EXPECT_EQ(out().find(" more "), std::string::npos) << out();
  process_.out.str("");
  script({{"/v1/status?pending_limit=100&held_limit=100&arrays=collapse",
           json_answer(200, R"({"resources":[],"jobs":[],"pending_total":0,"held_total":0,"blocked_total":2,"finished_total":0})")}});
  EXPECT_EQ(run({"status"}), 0);
  EXPECT_TRUE(out().ends_with("\n2 more blocked jobs: those above are the oldest 100 (gpuq status --all "
                              "lists every one)\n"))
      << out();

  // Only pending jobs, all left out (a page past the end): not "no jobs".
  process_.out.str("");
  script({{"/v1/status?pending_limit=100&held_limit=100&arrays=collapse",
           json_answer(200, R"({"resources":[],"jobs":[],"pending_total":1,"finished_total":0})")}});
  EXPECT_EQ(run({"status"}), 0);
  EXPECT_TRUE(out().ends_with("1 more pending job: those above are the first 100 to be served "
                              "(gpuq status --all lists every one)\n"))
      << out();

  process_.out.str("");
  script({{"/v1/status?finished=all&arrays=collapse",
           json_answer(200, R"({"resources":[],"jobs":[)" + jobs + R"(],"finished_total":0})")}});
  EXPECT_EQ(run({"status", "--all"}), 0);
  EXPECT_EQ(out().find("more pending"), std::string::npos) << out();
}

// An unfinished array is one line, placed among the jobs by its first element's id; --expand
// asks the daemon for every element and shows no array line.
TEST_F(Commands, StatusShowsAnUnfinishedArrayAsOneLineAmongTheJobs) {
  std::string arrays =
      R"("arrays":[{"id":2,"name":"shards","size":10,"max_running":2,"first_job":5,"last_job":14,)"
      R"("counts":{"pending":5,"running":2,"succeeded":2,"failed":1}}])";
  std::string body = R"({"resources":[],"jobs":[)" + job_json(3, "running") + "," +
                     job_json(20, "pending") + "]," + arrays + "}";
  script({{"/v1/status?pending_limit=100&held_limit=100&arrays=collapse", json_answer(200, body)}});
  EXPECT_EQ(run({"status"}), 0);
  std::string text = out();
  size_t job3 = text.find("\n3     -       running");
  size_t array = text.find("\n5-14  shards  running  -    -     -     10 elements: 2 running, 5 pending, "
                           "2 succeeded, 1 failed; at most 2 at once\n");
  size_t job20 = text.find("\n20    -       pending");
  ASSERT_NE(job3, std::string::npos) << text;
  ASSERT_NE(array, std::string::npos) << text;
  ASSERT_NE(job20, std::string::npos) << text;
  EXPECT_LT(job3, array);
  EXPECT_LT(array, job20);

  process_.out.str("");
  script({{"/v1/status", json_answer(200, body)}});
  EXPECT_EQ(run({"status", "--expand"}), 0);
  EXPECT_EQ(out().find("shards"), std::string::npos) << out();
}

TEST_F(Commands, StatusJsonIsTheDaemonsAnswer) {
  std::string body = R"({"resources":[],"jobs":[{"z":1,"a":2}]})";
  script({{"/v1/status", json_answer(200, body)}});
  EXPECT_EQ(run({"status", "--json"}), 0);
  EXPECT_EQ(out(), body + "\n");
}

// --user and --mine ask the daemon for the page of one user's jobs (user_page=1: the first of
// theirs to be served, their counts), with their arrays as one line each; --all and --json
// for every one of their jobs.
TEST_F(Commands, StatusOfOneUserAsksTheDaemonForTheirJobs) {
  std::string body = R"({"resources":[],"jobs":[],"pending_total":120,"held_total":0,"blocked_total":0,)"
                     R"("arrays":[{"id":3,"name":"sweep","counts":{"pending":2},"first_job":7,"last_job":8}]})";
  script({{"/v1/status?pending_limit=100&held_limit=100&user_page=1&arrays=collapse&user=ann%20b",
           json_answer(200, body)}});
  EXPECT_EQ(run({"status", "--user", "ann b"}), 0) << err();
  EXPECT_NE(out().find("sweep"), std::string::npos) << out();
  EXPECT_NE(out().find("120 more pending jobs"), std::string::npos) << out();
  script({{"/v1/status?finished=all&arrays=collapse&user=me", json_answer(200, body)}});
  EXPECT_EQ(run({"status", "--all", "--mine"}), 0) << err();
  script({{"/v1/status?user=me", json_answer(200, body)}});
  EXPECT_EQ(run({"status", "--json", "--mine"}), 0) << err();
  EXPECT_NE(run({"status", "--mine", "--user", "ann"}), 0);
}

TEST_F(Commands, ShowPrintsFieldsAndRuns) {
  std::string runs =
      R"([{"number":1,"gpus":[0,1],"started_at":"2026-11-29T10:00:00.000Z",)"
      R"("started_at_ms":1000,"ended_at_ms":61000,"exit_code":null,"signal":9,"outcome":"lost"},)"
      R"({"number":2,"gpus":[1],"started_at":"2026-11-29T10:05:00.000Z",)"
      R"("started_at_ms":100000,"ended_at_ms":null,"exit_code":null,"signal":null,"outcome":"running"}])";
  std::string body = job_json(7, "running", "", runs);
  script({{"/v1/jobs/train%20a", json_answer(200, body)}});
  process_.wall = 145'000;
  EXPECT_EQ(run({"show", "train a"}), 0);
  EXPECT_NE(out().find("state:      running\n"), std::string::npos) << out();
  EXPECT_NE(out().find("command:    train.sh\n"), std::string::npos) << out();
  EXPECT_NE(out().find("RUN  GPUS  STARTED                   DURATION  EXIT      OUTCOME\n"
                       "1    0,1   2026-11-29T10:00:00.000Z  1m00s     signal 9  lost\n"
                       "2    1     2026-11-29T10:05:00.000Z  45s       -         running\n"),
            std::string::npos)
      << out();
}

TEST_F(Commands, CancelReportsEachJob) {
  script(
      {{"/v1/jobs/7/cancel", json_answer(200, job_json(7, "cancelled"))},
       {"/v1/jobs/8/cancel",
        json_answer(409, R"({"error":{"code":"conflict","message":"job 8 already succeeded"}})")},
       {"/v1/jobs/9/cancel", json_answer(200, job_json(9, "cancelled"))}});
  EXPECT_EQ(run({"cancel", "7", "8", "9"}), kExitFailed);
  EXPECT_EQ(out(), "cancelled job 7\ncancelled job 9\n");
  EXPECT_EQ(err(), "gpuq: cannot cancel job 8: job 8 already succeeded\n");
  EXPECT_EQ(process_.daemon.requests[0].method, Method::kPost);
}

TEST_F(Commands, ACancelTheStoreCouldNotRecordYetSaysSo) {
  Json accepted = Json::parse(job_json(7, "running"));
  accepted["cancel"] = "requested";
  accepted["note"] = "the store cannot be written now; the cancel holds and is recorded once it can be";
  script({{"/v1/jobs/7/cancel", json_answer(202, accepted.dump())}});
  EXPECT_EQ(run({"cancel", "7"}), kExitOk) << err();
  EXPECT_EQ(out(),
            "cancel of job 7 requested: the store cannot be written now; the cancel holds and is "
            "recorded once it can be\n");
}

TEST_F(Commands, EventsPrintsPagesUntilEmpty) {
  script(
      {{"/v1/events?after=0",
        json_answer(
            200,
            R"({"events":[{"seq":1,"time":"T1","time_ms":1,"kind":"daemon.started","job":null,"run":null,"data":{}},)"
            R"({"seq":2,"time":"T2","time_ms":2,"kind":"job.started","job":7,"run":1,"data":{"gpus":[0]}}],"last_seq":2})")},
       {"/v1/events?after=2", json_answer(200, R"({"events":[],"last_seq":2})")}});
  EXPECT_EQ(run({"events"}), 0);
  EXPECT_EQ(out(), "1 T1 daemon.started\n2 T2 job.started job=7 run=1 {\"gpus\":[0]}\n");
}

TEST_F(Commands, EventsJsonKeepsTheDaemonsObjects) {
  script(
      {{"/v1/events?after=5",
        json_answer(
            200,
            R"({"events":[{"seq":6,"time":"T","kind":"job.failed","job":3,"run":2,"data":{"exit_code":1}}],"last_seq":6})")},
       {"/v1/events?after=6", json_answer(200, R"({"events":[],"last_seq":6})")}});
  EXPECT_EQ(run({"events", "--json", "--after", "5"}), 0);
  EXPECT_EQ(out(),
            R"({"seq":6,"time":"T","kind":"job.failed","job":3,"run":2,"data":{"exit_code":1}})"
            "\n");
}

TEST_F(Commands, EventsFollowLongPolls) {
  script(
      {{"/v1/events?after=0", json_answer(200, R"({"events":[],"last_seq":0})")},
       {"/v1/events?after=0&wait_ms=30000",
        json_answer(
            200,
            R"({"events":[{"seq":1,"time":"T","kind":"job.submitted","job":1,"run":null,"data":null}],"last_seq":1})")},
       {"/v1/events?after=1&wait_ms=30000", fail(Code::kUnavailable, "no socket at /s")}});
  EXPECT_EQ(run({"events", "--follow"}), kExitNoDaemon);
  EXPECT_EQ(out(), "1 T job.submitted job=1\n");
  EXPECT_EQ(process_.daemon.requests[1].timeout, Millis(40'000));
}

TEST_F(Commands, WaitReadsTheCursorFirstThenLongPolls) {
  script(
      {{"/v1/events?after=0&limit=0", json_answer(200, R"({"events":[],"last_seq":41})")},
       {"/v1/jobs/7", json_answer(200, job_json(7, "running"))},
       {"/v1/jobs/8", json_answer(200, job_json(8, "succeeded"))},
       {"/v1/events?after=41&wait_ms=30000",
        json_answer(200, R"({"events":[{"seq":42,"kind":"job.started","job":9}],"last_seq":42})")},
       {"/v1/events?after=42&wait_ms=30000",
        json_answer(200,
                    R"({"events":[{"seq":43,"kind":"job.succeeded","job":7}],"last_seq":43})")},
       {"/v1/jobs/7", json_answer(200, job_json(7, "succeeded"))}});
  EXPECT_EQ(run({"wait", "7", "8"}), 0);
  EXPECT_EQ(err(), "");
  EXPECT_TRUE(steps_.empty());
  EXPECT_EQ(process_.daemon.requests[3].timeout, Millis(40'000));
}

TEST_F(Commands, WaitExitsOneWhenAJobFailed) {
  script({{"/v1/events?after=0&limit=0", json_answer(200, R"({"events":[],"last_seq":3})")},
          {"/v1/jobs/a", json_answer(200, job_json(7, "failed", R"(,"reason":"exit 1")"))},
          {"/v1/jobs/b", json_answer(200, job_json(8, "skipped"))}});
  EXPECT_EQ(run({"wait", "a", "b"}), kExitFailed);
  EXPECT_EQ(err(), "gpuq: job 7 failed: exit 1\n");
}

TEST_F(Commands, WaitTimesOutWith124) {
  script({{"/v1/events?after=0&limit=0", json_answer(200, R"({"events":[],"last_seq":0})")},
          {"/v1/jobs/7", json_answer(200, job_json(7, "pending"))}});
  auto handler = process_.daemon.handler;
  process_.daemon.handler = [&](const HttpRequest& request) -> Result<HttpResponse> {
    if (request.target.find("wait_ms=") == std::string::npos) return handler(request);
    EXPECT_EQ(request.target, "/v1/events?after=0&wait_ms=5000");
    process_.steady += 5000;  // the long-poll waited its whole time
    return json_answer(200, R"({"events":[],"last_seq":0})");
  };
  EXPECT_EQ(run({"wait", "7", "--timeout", "5s"}), kExitTimeout);
  EXPECT_EQ(err(), "gpuq: timed out after 5s; still unfinished: job 7 pending\n");
}

TEST_F(Commands, WaitFallsBackWhenLimitZeroIsRefused) {
  script({{"/v1/events?after=0&limit=0",
           json_answer(400, R"({"error":{"code":"invalid_argument","message":"limit"}})")},
          {"/v1/events?after=0&limit=1", json_answer(200, R"({"events":[],"last_seq":9})")},
          {"/v1/jobs/7", json_answer(200, job_json(7, "succeeded"))}});
  EXPECT_EQ(run({"wait", "7"}), 0);
}

TEST_F(Commands, LogsReadsTheWholeLog) {
  auto log = [](std::string body, int size, std::string state = "running", int run = 1) {
    return json_answer(200, std::move(body),
                       {{"x-gpuq-log-size", std::to_string(size)},
                        {"x-gpuq-run", std::to_string(run)},
                        {"x-gpuq-job-state", state}});
  };
  script({{"/v1/jobs/7/log?offset=0", log("hello ", 11)},
          {"/v1/jobs/7/log?offset=6&run=1", log("world", 11)}});
  EXPECT_EQ(run({"logs", "7"}), 0);
  EXPECT_EQ(out(), "hello world");
}

TEST_F(Commands, LogsFollowWaitsForTheEndAndCrossesRuns) {
  auto log = [](std::string body, int size, std::string state, int run) {
    return json_answer(200, std::move(body),
                       {{"x-gpuq-log-size", std::to_string(size)},
                        {"x-gpuq-run", std::to_string(run)},
                        {"x-gpuq-job-state", state}});
  };
  script({{"/v1/jobs/7/log?offset=0", log("a", 1, "running", 1)},
          {"/v1/jobs/7/log?offset=0&limit=1", log("a", 1, "running", 1)},  // still run 1
          {"/v1/jobs/7/log?offset=1&run=1", log("b", 2, "running", 1)},
          {"/v1/jobs/7/log?offset=0&limit=1", log("a", 2, "pending", 2)},  // a retry began
          {"/v1/jobs/7/log?offset=0&run=2", log("c", 1, "running", 2)},
          {"/v1/jobs/7/log?offset=0&limit=1", log("c", 1, "succeeded", 2)},
          {"/v1/jobs/7/log?offset=1&run=2", log("", 1, "succeeded", 2)},
          {"/v1/jobs/7/log?offset=0&limit=1", log("c", 1, "succeeded", 2)}});
  EXPECT_EQ(run({"logs", "7", "-f"}), 0);
  EXPECT_EQ(out(), "abc");
  EXPECT_EQ(err(), "gpuq: --- run 2 ---\n");
  EXPECT_EQ(process_.sleeps.size(), 2u);
  EXPECT_TRUE(steps_.empty());
}

TEST_F(Commands, LogsFollowShowsTheImagesPullThenTheRunFromItsStart) {
  auto log = [](std::string body, int size, std::string state, int run) {
    return json_answer(200, std::move(body),
                       {{"x-gpuq-log-size", std::to_string(size)},
                        {"x-gpuq-run", std::to_string(run)},
                        {"x-gpuq-job-state", state}});
  };
  // Before its first run, a container job's log is its image's pull (run 0).
  script({{"/v1/jobs/7/log?offset=0", log("pulling\n", 8, "pending", 0)},
          {"/v1/jobs/7/log?offset=0&limit=1", log("p", 8, "pending", 0)},
          {"/v1/jobs/7/log?offset=8", log("un 1 output\n", 16, "running", 1)},  // run 1 began
          {"/v1/jobs/7/log?offset=0&run=1", log("run 1 output\n", 13, "succeeded", 1)},
          {"/v1/jobs/7/log?offset=0&limit=1", log("r", 13, "succeeded", 1)}});
  EXPECT_EQ(run({"logs", "7", "-f"}), 0);
  EXPECT_EQ(out(), "pulling\nrun 1 output\n") << "run 1's log from its first byte";
  EXPECT_EQ(err(), "gpuq: --- run 1 ---\n");
  EXPECT_TRUE(steps_.empty());
}

TEST_F(Commands, GpusShowsModeAndTable) {
  script(
      {{"/v1/gpus",
        json_answer(
            200,
            R"({"mode":"fake:4","note":"simulated GPUs","resources":[)"
            R"({"name":"gpu0","index":0,"model":"fake","memory_total_mib":1024,"memory_used_mib":0,"utilization":0,"state":"free","job":null},)"
            R"({"name":"gpu1","index":1,"model":"fake","memory_total_mib":1024,"memory_used_mib":512,"utilization":97,"state":"busy","job":3},)"
            R"({"name":"gpu2","index":2,"model":"fake","memory_total_mib":1024,"memory_used_mib":900,"state":"foreign","job":null,)"
            R"("foreign":{"processes":[{"pid":4242,"command":"sleep 300","user":"ann","used_memory_mib":900}]}},)"
            R"({"name":"gpu3","index":3,"model":"fake","memory_total_mib":1024,"memory_used_mib":0,"state":"attention","job":null,)"
            R"("attention":{"job":5,"run":2,"processes":[{"pid":77,"command":"python serve.py","user":"ann"}]}}]})")}});
  EXPECT_EQ(run({"gpus"}), 0);
  EXPECT_EQ(out(),
            "mode: fake:4 (simulated GPUs)\n"
            "NAME  INDEX  MODEL  MEMORY        UTIL  STATE      JOB  NOTE\n"
            "gpu0  0      fake   0/1024 MiB    0%    free       -\n"
            "gpu1  1      fake   512/1024 MiB  97%   busy       3\n"
            "gpu2  2      fake   900/1024 MiB  -     foreign    -    pid 4242 sleep 300 (900 MiB)\n"
            "gpu3  3      fake   0/1024 MiB    -     attention  -    cleanup of job 5 run 2 unconfirmed "
            "(pid 77 python serve.py); check, then: gpuq release --attention gpu3\n");
}

}  // namespace
}  // namespace gpuq::cli
