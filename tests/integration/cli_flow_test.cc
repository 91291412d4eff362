// SPDX-License-Identifier: Apache-2.0
// The CLI's contracts end to end: JSON shapes, logs, wait statuses, events, gpus.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "harness.h"
#include "unix_http.h"

namespace gpuq::testing {
namespace {

// `gpuq --version`: the version, the commit and day of the build, the API it speaks and the
// store schema it writes; the daemon's health says the same API and schema.
TEST(CliFlow, VersionSaysTheBuildTheApiAndTheSchema) {
  Harness h("fake:1");
  auto r = h.gpuq({"--version"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_match(
      r.out, m,
      std::regex(R"(gpuq \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}(-dirty)?|unknown), built )"
                 R"(\d{4}-\d{2}-\d{2}\)\nAPI (\d+), store schema (\d+)\n)")))
      << r.out;
  h.start();
  EXPECT_EQ(h.health()["api_version"], std::stoi(m[3]));
  EXPECT_EQ(h.health()["schema_version"], std::stoi(m[4]));
}

TEST(CliFlow, ScriptSubmitRunsTheSnapshotWithTheRunEnvironment) {
  Harness h("fake:2");
  h.start();
  std::ofstream(h.path("train.sh")) << "#!/bin/bash\necho \"args=$* id=$GPUQ_JOB_ID run=$GPUQ_RUN_NUMBER "
                                       "gpus=$CUDA_VISIBLE_DEVICES resume=$GPUQ_RESUME pwd=$(pwd)\"\n";
  auto job = h.gpuq_json({"submit", "--json", "--gpus", "2", "--name", "train", "train.sh", "--lr", "3"});
  int64_t id = job["id"];
  // Editing the script after submit changes nothing: the job runs its snapshot.
  std::ofstream(h.path("train.sh")) << "#!/bin/bash\necho edited\n";
  ASSERT_EQ(h.gpuq({"wait", "train", "--timeout", "30s"}).status, 0);
  auto log = h.gpuq({"logs", "train"});
  EXPECT_EQ(log.out, "args=--lr 3 id=" + std::to_string(id) + " run=1 gpus=0,1 resume=0 pwd=" + h.work() + "\n");
  // gpuq show (and the dashboard's Job page) shows the snapshot that ran, with its arguments.
  auto shown = h.show(id);
  ASSERT_TRUE(shown["script"].is_object()) << shown.dump();
  EXPECT_EQ(shown["script"]["name"], "train.sh");
  EXPECT_EQ(shown["script"]["text"].get<std::string>().find("edited"), std::string::npos);
  EXPECT_NE(shown["script"]["text"].get<std::string>().find("args=$*"), std::string::npos);
  EXPECT_EQ(shown["script"]["args"], nlohmann::json::array({"--lr", "3"}));
  EXPECT_TRUE(shown["argv"].is_null());
}

// A job file written for the queue people move from runs as written: `# LANE=gpu` is the GPU lane
// (one GPU), and its directives are read below the first command too (here DONE_IF: the run
// makes the file it tests, so the first run counts and the second submit is skipped).
TEST(CliFlow, AJobFileOfTheQueuePeopleMoveFromRunsAsWritten) {
  Harness h("fake:2");
  h.start();
  std::ofstream(h.path("eval_a15.sh")) << "#!/bin/bash\nset -e\n# LANE=gpu\n"
                                          "# DONE_IF=test -f already.done\n"
                                          "# gpuq-out: ckpt/a15/ results/eval_a15.json\n"
                                          "echo \"gpus=$CUDA_VISIBLE_DEVICES\"\n"
                                          "touch already.done\n";
  auto first = h.gpuq_json({"submit", "--json", "eval_a15.sh"});
  ASSERT_EQ(first["gpus_requested"], 1) << first.dump();
  int64_t id = first["id"];
  ASSERT_EQ(h.gpuq({"wait", std::to_string(id), "--timeout", "30s"}).status, 0);
  EXPECT_EQ(h.gpuq({"logs", std::to_string(id)}).out, "gpus=0\n");
  auto second = h.gpuq_json({"submit", "--json", "eval_a15.sh"});
  int64_t again = second["id"];
  ASSERT_EQ(h.gpuq({"wait", std::to_string(again), "--timeout", "30s"}).status, 0);
  EXPECT_EQ(h.show(again)["state"], "skipped");
}

// A directory of job files is submitted whole, each job named after its file (unless its header
// names it), so seeding the queue from it again queues nothing twice.
TEST(CliFlow, ADirectoryOfJobFilesIsSeededOnceWithEachJobNamedAfterItsFile) {
  Harness h("fake:1");
  h.start();
  std::filesystem::create_directories(h.path("seeds"));
  std::ofstream(h.path("seeds/prep.sh")) << "#!/bin/bash\necho prep\n";
  std::ofstream(h.path("seeds/eval.sh")) << "#!/bin/bash\n#gpuq name=eval-a15 gpus=1\necho eval\n";
  std::ofstream(h.path("seeds/notes.txt")) << "not a job\n";
  std::ofstream(h.path("seeds/.draft.sh")) << "#!/bin/bash\necho draft\n";
  auto first = h.gpuq({"submit", "seeds"});
  ASSERT_EQ(first.status, 0) << first.err;
  EXPECT_NE(first.out.find("(eval-a15)"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("(prep)"), std::string::npos) << first.out;
  EXPECT_EQ(first.err, "seeds: not job files (*.sh), not submitted: notes.txt\n");
  ASSERT_EQ(h.gpuq({"wait", "prep", "eval-a15", "--timeout", "30s"}).status, 0);
  EXPECT_EQ(h.gpuq({"logs", "prep"}).out, "prep\n");
  EXPECT_EQ(h.show_ref("eval-a15")["gpus_requested"], 1);

  auto again = h.gpuq({"submit", "seeds"});
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(again.out.find("created"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("existing"), std::string::npos) << again.out;
  EXPECT_EQ(h.gpuq_json({"status", "--json"})["jobs"].size(), 2u);

  std::ofstream(h.path("seeds/prep.sh")) << "#!/bin/bash\necho prep v2\n";
  auto changed = h.gpuq({"submit", "seeds"});
  EXPECT_NE(changed.status, 0);
  EXPECT_NE(changed.err.find("prep"), std::string::npos) << changed.err;
  EXPECT_EQ(h.gpuq_json({"status", "--json"})["jobs"].size(), 2u);  // all or nothing

  auto extra = h.gpuq({"submit", "seeds", "--fast"});
  EXPECT_EQ(extra.status, 2);
  EXPECT_NE(extra.err.find("put flags before it"), std::string::npos) << extra.err;

  std::ofstream(h.path("seeds/07.sh")) << "#!/bin/bash\necho seven\n";  // a name of digits
  auto digits = h.gpuq({"submit", "seeds"});
  EXPECT_NE(digits.status, 0);
  EXPECT_NE(digits.err.find("seeds/07.sh: bad job name '07'"), std::string::npos) << digits.err;
}

TEST(CliFlow, ShowJsonHasTheContractFields) {
  Harness h("fake:1");
  h.start();
  int64_t id = h.submit_sh("exit 3", {"--gpus", "1", "--priority", "high"});
  EXPECT_EQ(h.gpuq({"wait", std::to_string(id), "--timeout", "30s"}).status, 1);
  auto j = h.show(id);
  for (const char* key : {"id", "name", "state", "priority", "gpus_requested", "reason", "runs"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["state"], "failed");
  EXPECT_EQ(j["priority"], 10);
  EXPECT_EQ(j["gpus_requested"], 1);
  const auto& run = j["runs"][0];
  for (const char* key : {"number", "gpus", "started_at", "ended_at", "exit_code", "signal", "outcome"}) {
    EXPECT_TRUE(run.contains(key)) << key;
  }
  EXPECT_EQ(run["exit_code"], 3);
  EXPECT_EQ(run["gpus"], nlohmann::json::array({0}));
  EXPECT_NE(j["reason"].get<std::string>().find("exit code 3"), std::string::npos);
  EXPECT_TRUE(j["script"].is_null());  // submit_sh submits a command
  EXPECT_EQ(j["argv"], nlohmann::json::array({"sh", "-c", "exit 3"}));
}

TEST(CliFlow, StatusJsonListsResourcesAndJobs) {
  Harness h("fake:2");
  h.start();
  int64_t id = h.submit_sh("while [ ! -e go ]; do sleep 0.02; done", {"--gpus", "1"});
  ASSERT_TRUE(h.wait_for(id, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  auto s = h.gpuq_json({"status", "--json"});
  ASSERT_EQ(s["resources"].size(), 2u);
  int busy = 0;
  for (const auto& r : s["resources"]) {
    for (const char* key : {"name", "index", "state", "job"}) EXPECT_TRUE(r.contains(key)) << key;
    if (r["state"] == "busy") {
      ++busy;
      EXPECT_EQ(r["job"], id);
    }
  }
  EXPECT_EQ(busy, 1);
  ASSERT_EQ(s["jobs"].size(), 1u);
  EXPECT_EQ(s["jobs"][0]["id"], id);
  auto human = h.gpuq({"status"});
  EXPECT_EQ(human.status, 0);
  EXPECT_NE(human.out.find("running"), std::string::npos) << human.out;
  h.touch("go");
}

TEST(CliFlow, EventsCoverALifecycleInOrder) {
  Harness h("fake:1");
  h.start();
  int64_t ok = h.submit_sh("true");
  int64_t bad = h.submit_sh("false");
  int64_t held = h.submit_sh("sleep 300", {"--gpus", "1"});
  int64_t waiting = h.submit_sh("true", {"--gpus", "1"});
  ASSERT_EQ(h.gpuq({"cancel", std::to_string(waiting)}).status, 0);
  ASSERT_EQ(h.gpuq({"wait", std::to_string(ok), std::to_string(bad), "--timeout", "30s"}).status, 1);
  ASSERT_EQ(h.gpuq({"cancel", std::to_string(held)}).status, 0);
  ASSERT_TRUE(h.wait_for(held, [](const nlohmann::json& j) { return j["state"] == "cancelled"; }));
  auto events = h.events();
  int64_t last_seq = 0;
  std::set<std::string> kinds;
  for (const auto& e : events) {
    EXPECT_GT(e["seq"].get<int64_t>(), last_seq);
    last_seq = e["seq"];
    for (const char* key : {"seq", "time", "kind", "job"}) EXPECT_TRUE(e.contains(key)) << key;
    kinds.insert(e["kind"]);
  }
  for (const char* kind : {"daemon.started", "job.submitted", "job.started", "job.succeeded",
                           "job.failed", "job.cancelled"}) {
    EXPECT_TRUE(kinds.count(kind)) << kind;
  }
  auto after = h.gpuq({"events", "--json", "--after", std::to_string(last_seq - 1)});
  EXPECT_EQ(std::count(after.out.begin(), after.out.end(), '\n'), 1);
}

TEST(CliFlow, WaitTimesOutWith124) {
  Harness h("fake:1");
  h.start();
  int64_t id = h.submit_sh("sleep 300");
  auto r = h.gpuq({"wait", std::to_string(id), "--timeout", "300ms"});
  EXPECT_EQ(r.status, 124);
  ASSERT_EQ(h.gpuq({"cancel", std::to_string(id)}).status, 0);
}

TEST(CliFlow, GpusSaysWhatItUses) {
  Harness h("fake:3");
  h.start();
  auto g = h.gpuq_json({"gpus", "--json"});
  EXPECT_EQ(g["mode"], "fake");
  EXPECT_EQ(g["resources"].size(), 3u);
  EXPECT_NE(g["note"].get<std::string>().find("simulated"), std::string::npos) << g.dump();
}

TEST(CliFlow, NoGpuMeansOneStandInLane) {
  Harness h("auto");  // this machine has no NVIDIA GPU (or the test points at a missing nvidia-smi)
  setenv("GPUQ_NVIDIA_SMI", "/nonexistent/nvidia-smi", 1);
  h.start();
  unsetenv("GPUQ_NVIDIA_SMI");
  auto g = h.gpuq_json({"gpus", "--json"});
  EXPECT_EQ(g["mode"], "lane");
  ASSERT_EQ(g["resources"].size(), 1u);
  EXPECT_EQ(g["resources"][0]["name"], "gpu0");
  EXPECT_TRUE(g["resources"][0]["index"].is_null());
  int64_t id = h.submit_sh("echo \"$GPUQ_GPUS\"", {"--gpus", "1"});
  ASSERT_EQ(h.gpuq({"wait", std::to_string(id), "--timeout", "30s"}).status, 0);
  EXPECT_EQ(h.gpuq({"logs", std::to_string(id)}).out, "gpu0\n");
}

// /v1/status lists every unfinished job and only the latest finished ones (by finish time,
// then id), and says how many finished jobs there are, so `gpuq status` still counts the rest.
TEST(CliFlow, StatusListsTheLatestFinishedJobsAndCountsTheRest) {
  Harness h("fake:2");
  h.start();
  std::vector<std::string> ids;
  for (int i = 0; i < 13; ++i) ids.push_back(std::to_string(h.submit_sh(i % 4 == 0 ? "false" : "true")));
  std::vector<std::string> wait = {"wait", "--timeout", "60s"};
  wait.insert(wait.end(), ids.begin(), ids.end());
  ASSERT_EQ(h.gpuq(wait).status, 1);  // some failed
  int64_t held = h.submit_sh("true", {"--hold"});

  auto all = h.gpuq_json({"status", "--all", "--json"});
  EXPECT_EQ(all["finished_total"], 13);
  ASSERT_EQ(all["jobs"].size(), 14u);
  std::vector<std::pair<std::string, int64_t>> finished;
  for (const auto& job : all["jobs"]) {
    if (job["id"] != held) finished.emplace_back(job["finished_at"].get<std::string>(), job["id"].get<int64_t>());
  }
  std::sort(finished.rbegin(), finished.rend());  // latest first
  std::set<int64_t> latest;
  for (size_t i = 0; i < 10; ++i) latest.insert(finished[i].second);
  latest.insert(held);

  auto status = h.gpuq_json({"status", "--json"});
  EXPECT_EQ(status["finished_total"], 13);
  std::set<int64_t> listed;
  std::vector<int64_t> order;
  for (const auto& job : status["jobs"]) {
    listed.insert(job["id"].get<int64_t>());
    order.push_back(job["id"].get<int64_t>());
    EXPECT_EQ(job["runs"].size(), job["id"] == held ? 0u : 1u) << job.dump();
  }
  EXPECT_EQ(listed, latest);
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));

  auto human = h.gpuq({"status"});
  EXPECT_EQ(human.status, 0);
  EXPECT_TRUE(human.out.ends_with("3 more finished jobs (gpuq status --all)\n")) << human.out;

  auto active = unix_get(h.home() + "/gpuq.sock", "/v1/status?active=1");
  auto active_json = nlohmann::json::parse(active.body);
  ASSERT_EQ(active_json["jobs"].size(), 1u);
  EXPECT_EQ(active_json["jobs"][0]["id"], held);
  auto two = nlohmann::json::parse(unix_get(h.home() + "/gpuq.sock", "/v1/status?finished=2").body);
  EXPECT_EQ(two["jobs"].size(), 3u);
  auto bad = unix_get(h.home() + "/gpuq.sock", "/v1/status?finished=lots");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("invalid_argument"), std::string::npos) << bad.body;
}

}  // namespace
}  // namespace gpuq::testing
