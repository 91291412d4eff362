// SPDX-License-Identifier: Apache-2.0
#include "spec/plan.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "model/spec_json.h"
#include "spec/dependency_graph.h"
#include "spec/json_lines.h"

namespace gpuq::spec {
namespace {

using nlohmann::json;

class PlanFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           (std::string("gpuq-plan-") + std::to_string(getpid()) + "-" + info->name());
    std::filesystem::create_directories(dir_);
    context_.cwd = "/work/exp";
    context_.env = {{"PATH", "/usr/bin:/bin"}};
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    auto path = dir_ / name;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  Plan load(const std::string& text) {
    auto plan = load_plan(write("plan.json", text), context_);
    EXPECT_TRUE(plan) << plan.error().message;
    return plan ? *plan : Plan{};
  }
  // The error load_plan returns, with the temp directory cut away.
  std::string error_of(const std::string& text) {
    auto plan = load_plan(write("plan.json", text), context_);
    EXPECT_FALSE(plan) << plan->request.dump();
    return plan ? "" : relative(plan.error().message);
  }
  std::vector<std::string> all_of(const std::string& text) {
    PlanCheck check = check_plan(write("plan.json", text), context_);
    std::vector<std::string> out;
    for (const auto& d : check.diagnostics) out.push_back(relative(d.text()));
    return out;
  }
  std::string relative(std::string text) const {
    std::string prefix = dir_.string() + "/";
    for (size_t at; (at = text.find(prefix)) != std::string::npos;) text.erase(at, prefix.size());
    return text;
  }

  std::filesystem::path dir_;
  PlanContext context_;
};

TEST_F(PlanFiles, ObjectFormWithScriptsDepsEstimatesAndReservations) {
  write("train.sh",
        "#!/bin/bash\n#gpuq gpus=2 priority=high\n# gpuq-out: ckpt/\npython train.py\n");
  write("jobs/eval.sh", "#!/bin/bash\n# LANE=net\npython eval.py\n");
  std::filesystem::create_directories(dir_ / "sub");
  Plan plan = load(R"({
  "jobs": [
    {"id": "train", "script": "train.sh", "args": ["--lr", "3e-4"], "est_hours": 1.5},
    {"id": "eval", "script": "jobs/eval.sh", "deps": ["train", "file:ckpt/READY", "after:train"],
     "gpus": 1, "retries": 2, "timeout": "2h"},
    {"id": "report", "command": ["python", "report.py"], "deps": ["eval"], "priority": 90,
     "cwd": "sub", "env": {"HF_HOME": "/data/hf"}}
  ],
  "reservations": [{"gpus": [0, 1], "jobs": ["train", "eval"]}]
})");
  const json& jobs = plan.request["jobs"];
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0]["name"], "train");
  EXPECT_EQ(jobs[0]["gpus"], 2);
  EXPECT_EQ(jobs[0]["priority"], "high");
  EXPECT_EQ(jobs[0]["est_ms"], 5'400'000);
  EXPECT_EQ(jobs[0]["outputs"], json({"ckpt/"}));
  EXPECT_EQ(jobs[0]["script"]["name"], path("train.sh"));
  EXPECT_EQ(jobs[0]["script"]["text"],
            "#!/bin/bash\n#gpuq gpus=2 priority=high\n# gpuq-out: ckpt/\npython train.py\n");
  EXPECT_EQ(jobs[0]["script"]["args"], json({"--lr", "3e-4"}));
  EXPECT_EQ(jobs[0]["cwd"], "/work/exp");
  EXPECT_EQ(jobs[0]["env"], json({{"PATH", "/usr/bin:/bin"}}));
  EXPECT_EQ(jobs[0]["source"], path("plan.json") + ":3");
  EXPECT_EQ(jobs[0]["reservation"], "r0");
  EXPECT_EQ(jobs[1]["after"], json({"train"}));
  EXPECT_EQ(jobs[1]["wait_file"], json({"ckpt/READY"}));
  EXPECT_EQ(jobs[1]["after_any"], json({"train"}));
  EXPECT_EQ(jobs[1]["lanes"], json({"net"}));
  EXPECT_EQ(jobs[1]["retries"], 2);
  EXPECT_EQ(jobs[1]["timeout"], "2h");
  EXPECT_EQ(jobs[1]["source"], path("plan.json") + ":4");
  EXPECT_EQ(jobs[2]["argv"], json({"python", "report.py"}));
  EXPECT_EQ(jobs[2]["priority"], 90);
  EXPECT_EQ(jobs[2]["cwd"], (dir_ / "sub").string());
  EXPECT_EQ(jobs[2]["env"], json({{"PATH", "/usr/bin:/bin"}, {"HF_HOME", "/data/hf"}}));
  EXPECT_EQ(jobs[2]["source"], path("plan.json") + ":6");
  EXPECT_FALSE(jobs[2].contains("reservation"));
  EXPECT_EQ(plan.request["reservations"],
            json::parse(R"([{"name": "r0", "gpus": [0, 1], "jobs": ["train", "eval"]}])"));
  EXPECT_TRUE(plan.warnings.empty()) << plan.warnings.front().text();
  for (const auto& job : jobs) EXPECT_TRUE(spec_from_json(job)) << job.dump();
}

TEST_F(PlanFiles, BareListFormAndFractionalEstimates) {
  Plan plan = load(
      "[\n  {\"id\": \"a\", \"command\": [\"true\"], \"est_hours\": 0.25},\n\n"
      "  {\"id\": \"b\", \"command\": [\"true\"], \"deps\": [\"a\"], \"est_hours\": 2}\n]\n");
  ASSERT_EQ(plan.request["jobs"].size(), 2u);
  EXPECT_EQ(plan.request["jobs"][0]["est_ms"], 900'000);
  EXPECT_EQ(plan.request["jobs"][1]["est_ms"], 7'200'000);
  EXPECT_EQ(plan.request["jobs"][0]["source"], path("plan.json") + ":2");
  EXPECT_EQ(plan.request["jobs"][1]["source"], path("plan.json") + ":4");
  EXPECT_EQ(plan.request["reservations"], json::array());
}

TEST_F(PlanFiles, PlanFieldsOverrideHeaderFields) {
  write("job.sh",
        "#gpuq gpus=2 lane=net,cpu est=3h after=x after-any=y timeout=1h requires=\"test -f a\"\n"
        "#gpuq name=from-header\n"
        "run\n");
  Plan plan = load(R"({"jobs": [
    {"id": "j", "script": "job.sh", "gpus": 1, "lane": "disk", "est_hours": 1, "deps": ["z"],
     "timeout_ms": 5000}]})");
  const json& job = plan.request["jobs"][0];
  EXPECT_EQ(job["gpus"], 1);
  EXPECT_FALSE(job.contains("lanes"));
  EXPECT_EQ(job["lane"], "disk");
  EXPECT_FALSE(job.contains("est"));
  EXPECT_EQ(job["est_ms"], 3'600'000);
  EXPECT_FALSE(job.contains("timeout"));
  EXPECT_EQ(job["timeout_ms"], 5000);
  EXPECT_EQ(job["after"], json({"z"}));      // plan replaces the list
  EXPECT_EQ(job["after_any"], json({"y"}));  // a key the plan does not set stays
  EXPECT_EQ(job["requires"], json({"test -f a"}));
  EXPECT_EQ(job["name"], "j");
  std::vector<std::string> warnings;
  for (const auto& w : plan.warnings) warnings.push_back(relative(w.text()));
  EXPECT_EQ(
      warnings,
      (std::vector<std::string>{
          "job.sh:1: warning: job 'j': dep 'y' is not in this plan; it must be an existing job",
          "job.sh:2: warning: the script sets name=from-header but the plan's id 'j' names the job",
          "plan.json:2: warning: job 'j': dep 'z' is not in this plan; it must be an existing "
          "job"}));
}

TEST_F(PlanFiles, DepsOutsideThePlanAreExistingJobsWithAWarning) {
  auto errors = all_of(
      "{\"jobs\": [\n {\"id\": \"a\", \"command\": [\"true\"],\n  \"deps\": [\n   \"b\",\n   "
      "\"old-job\"]},\n"
      " {\"id\": \"b\", \"command\": [\"true\"]}]}");
  EXPECT_EQ(errors, (std::vector<std::string>{"plan.json:5: warning: job 'a': dep 'old-job' is not "
                                              "in this plan; it must be an existing job"}));
}

TEST_F(PlanFiles, Cycles) {
  EXPECT_EQ(error_of(R"({"jobs": [
    {"id": "a", "command": ["true"], "deps": ["b"]},
    {"id": "b", "command": ["true"], "deps": ["c"]},
    {"id": "c", "command": ["true"], "deps": ["after:a"]}]})"),
            "plan.json:2: dependency cycle: a -> b -> c -> a (each waits for the next, so none can "
            "start); remove "
            "one of these deps");
  EXPECT_EQ(error_of(R"([{"id": "self", "command": ["true"], "deps": ["self"]}])").substr(0, 44),
            "plan.json:1: dependency cycle: self -> self ");
}

TEST_F(PlanFiles, StructuralErrorsNameTheLine) {
  EXPECT_EQ(error_of("{\"jobs\": [],\n \"extra\": 1}"),
            "plan.json:2: unknown top-level key 'extra'; a plan has \"jobs\" and \"reservations\"");
  EXPECT_EQ(error_of("[\n{\"command\": [\"true\"]}]"),
            "plan.json:2: job has no \"id\"; give each job a unique string id (it becomes the "
            "job's name)");
  EXPECT_EQ(
      error_of(
          "[{\"id\": \"a\", \"command\": [\"true\"]},\n {\"id\": \"a\", \"command\": [\"true\"]}]"),
      "plan.json:2: duplicate id 'a' (also at line 1); each job needs its own id");
  EXPECT_EQ(error_of("[\n {\"id\": \"a\", \"command\": [\"true\"],\n  \"gpu\": 1}]"),
            "plan.json:2: job 'a': unknown field 'gpu' (see docs/api.md, \"Submit request\")");
  EXPECT_EQ(error_of("[{\"id\": \"a\", \"command\": [\"true\"], \"gpus\": \"two\"}]"),
            "plan.json:1: job 'a': field 'gpus' must be an integer");
  EXPECT_EQ(error_of("[{\"id\": \"a\"}]"),
            "plan.json:1: job 'a' has no \"script\" (a path, relative to the plan), \"command\" "
            "(a list such as [\"python\", \"eval.py\"]) or \"steps\"");
  EXPECT_EQ(error_of("[{\"id\": \"a\",\n \"script\": \"nope.sh\"}]"),
            "plan.json:2: job 'a': no such script nope.sh (script paths are relative to the plan "
            "file's directory)");
  write("empty.sh", "\n");
  EXPECT_EQ(error_of("[{\"id\": \"a\", \"script\": \"empty.sh\"}]").substr(0, 45),
            "plan.json:1: job 'a': empty.sh: script is emp");
  EXPECT_EQ(error_of("[{\"id\": \"a\", \"script\": \"x.sh\", \"command\": [\"true\"]}]"),
            "plan.json:1: job 'a': give \"script\" or \"command\", not both");
  EXPECT_EQ(error_of("[{\"id\": \"a\", \"command\": [\"true\"], \"est_hours\": -1}]"),
            "plan.json:1: job 'a': \"est_hours\" must be a number of hours, such as 1.5 (at most "
            "876000, a hundred years)");
  // 1e300 hours overflowed est_ms (llround), and the message blamed 'est_ms' = INT64_MIN.
  EXPECT_EQ(error_of("[{\"id\": \"a\", \"command\": [\"true\"], \"est_hours\": 1e300}]"),
            "plan.json:1: job 'a': \"est_hours\" must be a number of hours, such as 1.5 (at most "
            "876000, a hundred years)");
  EXPECT_EQ(
      error_of("[{\"id\": \"a\", \"command\": [\"true\"], \"est_hours\": 1, \"est\": \"1h\"}]"),
      "plan.json:1: job 'a': give \"est_hours\" or \"est\", not both");
  EXPECT_EQ(error_of("[{\"id\": \"a\", \"command\": [\"true\"], \"deps\": [\"file:\"]}]"),
            "plan.json:1: empty dep 'file:'; write a job id, \"file:PATH\" or \"after:ID\"");
  EXPECT_EQ(error_of("[{\"id\": \"a\", \"command\": [\"true\"], \"name\": \"b\"}]"),
            "plan.json:1: job 'a': a plan names jobs by \"id\"; remove \"name\"");
  EXPECT_EQ(error_of("{\"jobs\": [\n  {\"id\": \"a\", \"command\": [\"true\"]\n  ]}").substr(0, 26),
            "plan.json:3: not valid JSO");
  EXPECT_EQ(error_of("{\"reservations\": []}"), "plan.json:1: the plan has no \"jobs\" list");
  EXPECT_EQ(relative(load_plan(path("missing.json"), context_).error().message),
            "missing.json: no such plan file; check the path");
}

TEST_F(PlanFiles, ScriptHeaderErrorsNameTheScript) {
  write("bad.sh", "#!/bin/bash\n#gpuq gpus=two\necho\n");
  EXPECT_EQ(error_of("[{\"id\": \"a\", \"script\": \"bad.sh\"}]"),
            "bad.sh:2: gpus=two is not a whole number; write it as gpus=2");
}

TEST_F(PlanFiles, Reservations) {
  const std::string jobs =
      R"({"jobs": [{"id": "a", "command": ["true"], "gpus": 2}, {"id": "b", "command": ["true"]}],
)";
  Plan plan = load(
      jobs +
      R"( "reservations": [{"name": "pair", "gpus": [2, 3], "jobs": ["a"]}, {"gpus": [1], "jobs": ["b"]}]})");
  EXPECT_EQ(plan.request["reservations"],
            json::parse(R"([{"name": "pair", "gpus": [2, 3], "jobs": ["a"]},
                                                          {"name": "r1", "gpus": [1], "jobs": ["b"]}])"));
  EXPECT_EQ(plan.request["jobs"][0]["reservation"], "pair");
  EXPECT_EQ(plan.request["jobs"][1]["reservation"], "r1");
  EXPECT_EQ(error_of(jobs + " \"reservations\": [{\"gpus\": [0, 1], \"jobs\": [\"a\", \"zz\"]}]}"),
            "plan.json:2: reservation 'r0' names job 'zz', which is not in this plan");
  EXPECT_EQ(error_of(jobs + " \"reservations\": [{\"gpus\": [0, 1], \"jobs\": [\"a\"]},\n"
                            "  {\"gpus\": [2, 3], \"jobs\": [\"b\", \"a\"]}]}"),
            "plan.json:3: job 'a' is already in reservation 'r0' (line 2); a job can be in one "
            "reservation");
  EXPECT_EQ(error_of(jobs + " \"reservations\": [{\"gpus\": [0], \"jobs\": [\"a\"]}]}"),
            "plan.json:2: job 'a' needs 2 GPUs but reservation 'r0' has 1; it could never start");
  EXPECT_EQ(
      error_of(jobs + " \"reservations\": [{\"gpus\": [0], \"jobs\": [\"b\"], \"size\": 1}]}"),
      "plan.json:2: unknown key 'size' in a reservation; known: name, gpus, jobs");
  EXPECT_EQ(error_of(jobs + " \"reservations\": [{\"gpus\": [], \"jobs\": [\"b\"]}]}"),
            "plan.json:2: reservation 'r0': \"gpus\" must be a non-empty list of GPU indices, as "
            "in [0, 1]");
}

// `gpuq simulate` reads a plan for its specs only: no request is kept, and the specs (the
// reservations' included) and the findings are those of a plan read for submitting.
TEST_F(PlanFiles, APlanReadWithoutItsRequestHasTheSameSpecsAndFindings) {
  write("train.sh", "#!/bin/bash\n#gpuq gpus=2 priority=high\npython train.py\n");
  const std::string text = R"({"jobs": [
  {"id": "a", "script": "train.sh", "args": ["--lr", "1"], "est_hours": 2},
  {"id": "b", "command": ["true"], "deps": ["a"], "env": {"K": "v"}, "lanes": ["net"]}],
 "reservations": [{"name": "pair", "gpus": [0, 1], "jobs": ["a"]}]})";
  Plan sent = load(text);
  context_.keep_request = false;
  Plan simulated = load(text);
  EXPECT_TRUE(simulated.request.is_null());
  ASSERT_EQ(simulated.specs.size(), 2u);
  for (size_t i = 0; i < sent.specs.size(); ++i) {
    EXPECT_EQ(spec_to_json(simulated.specs[i]), spec_to_json(sent.specs[i]));
  }
  EXPECT_EQ(simulated.specs[0].reservation, "pair");
  EXPECT_EQ(simulated.specs[0].gpus, 2);
  EXPECT_EQ(simulated.specs[0].estimate_ms, 7'200'000);
  EXPECT_EQ(simulated.reservations.size(), 1u);
  // A job that names another reservation than the one listing it is refused either way.
  const std::string conflict =
      R"({"jobs": [{"id": "a", "command": ["true"], "reservation": "mine"}],
 "reservations": [{"name": "pair", "gpus": [0], "jobs": ["a"]}]})";
  const std::string message =
      "plan.json:2: job 'a' sets \"reservation\": \"mine\" but is listed in reservation 'pair'";
  EXPECT_EQ(error_of(conflict), message);
  context_.keep_request = true;
  EXPECT_EQ(error_of(conflict), message);
}

TEST_F(PlanFiles, CheckPlanReportsEveryError) {
  write("bad.sh", "#gpuq gpu=1\n#gpuq retries=x\necho\n");
  auto all = all_of(R"([
  {"id": "a", "script": "bad.sh"},
  {"id": "b", "command": ["true"], "bogus": 1},
  {"id": "b", "command": ["true"]},
  {"command": ["true"]}
])");
  ASSERT_EQ(all.size(), 5u) << ::testing::PrintToString(all);
  EXPECT_EQ(all[0].substr(0, 44), "bad.sh:1: error: unknown directive 'gpu' in ");
  EXPECT_EQ(all[1].substr(0, 26), "bad.sh:2: error: retries=x");
  EXPECT_EQ(all[2].substr(0, 47), "plan.json:3: error: job 'b': unknown field 'bog");
  EXPECT_EQ(all[3].substr(0, 35), "plan.json:4: error: duplicate id 'b");
  EXPECT_EQ(all[4].substr(0, 37), "plan.json:5: error: job has no \"id\"; ");
}

TEST_F(PlanFiles, PreemptionInBothForms) {
  write("count.sh", "#!/bin/bash\n#gpuq preempt=yield\necho\n");
  write("again.sh", "#!/bin/bash\n#gpuq preempt=restart restart-within=1h\necho\n");
  Plan object = load(R"({"jobs": [
    {"id": "a", "command": ["true"], "preempt": "restart", "restart_within": "30m"},
    {"id": "b", "command": ["true"], "preempt": "yield"},
    {"id": "c", "script": "count.sh"},
    {"id": "d", "script": "again.sh", "restart_within": "10m"},
    {"id": "e", "script": "again.sh", "restart_within_ms": 5000},
    {"id": "f", "command": ["true"]}]})");
  const json& jobs = object.request["jobs"];
  EXPECT_EQ(jobs[0]["preempt"], "restart");
  EXPECT_EQ(jobs[0]["restart_within"], "30m");
  EXPECT_EQ(jobs[1]["preempt"], "yield");
  EXPECT_EQ(jobs[2]["preempt"], "yield");  // from the script's header
  EXPECT_EQ(jobs[3]["preempt"], "restart");
  EXPECT_EQ(jobs[3]["restart_within"], "10m");  // the plan's value replaces the header's
  EXPECT_FALSE(jobs[4].contains("restart_within"));  // either spelling replaces both
  EXPECT_EQ(jobs[4]["restart_within_ms"], 5000);
  EXPECT_FALSE(jobs[5].contains("preempt"));
  for (const auto& job : jobs) {
    auto spec = spec_from_json(job);
    ASSERT_TRUE(spec) << spec.error().message;
  }
  EXPECT_EQ(spec_from_json(jobs[0])->restart_within_ms, 30 * 60'000);
  EXPECT_EQ(spec_from_json(jobs[2])->preempt, PreemptMode::kYield);

  Plan list = load(R"([
    {"id": "x", "command": ["true"], "preempt": "restart", "restart_within": "2h"},
    {"id": "y", "script": "count.sh", "preempt": "never"}])");
  EXPECT_EQ(list.request["jobs"][0]["preempt"], "restart");
  EXPECT_EQ(list.request["jobs"][0]["restart_within"], "2h");
  EXPECT_EQ(list.request["jobs"][1]["preempt"], "never");  // the plan overrides the header
}

TEST_F(PlanFiles, PreemptionErrors) {
  EXPECT_EQ(error_of("[\n {\"id\": \"a\", \"command\": [\"true\"], \"preempt\": \"later\"}]"),
            "plan.json:2: job 'a': bad preempt mode 'later': use yield (the job saves its state "
            "and exits 75), restart (killed and rerun) or never");
  EXPECT_EQ(error_of(R"([{"id": "a", "command": ["true"], "preempt": 1}])"),
            "plan.json:1: job 'a': field 'preempt' must be \"yield\", \"restart\" or \"never\"");
  EXPECT_EQ(error_of(R"([{"id": "a", "command": ["true"], "restart_within": "30m"}])"),
            "plan.json:1: job 'a': 'restart_within' applies only to \"preempt\": \"restart\" "
            "(this job's mode is never); add \"preempt\": \"restart\" or remove it");
  EXPECT_EQ(error_of(R"({"jobs": [
    {"id": "a", "command": ["true"], "preempt": "yield", "restart_within": "30m"}]})"),
            "plan.json:2: job 'a': 'restart_within' applies only to \"preempt\": \"restart\" "
            "(this job's mode is yield); add \"preempt\": \"restart\" or remove it");
  EXPECT_EQ(
      error_of(
          R"([{"id": "a", "command": ["true"], "preempt": "restart", "restart_within": "soon"}])")
          .substr(0, 65),
      "plan.json:1: job 'a': field 'restart_within': bad duration 'soon'");
  // A header's restart-within= without its preempt=restart is the script's error.
  write("within.sh", "#!/bin/bash\n#gpuq restart-within=1h\necho\n");
  EXPECT_EQ(error_of(R"([{"id": "a", "script": "within.sh", "preempt": "restart"}])"),
            "within.sh:2: restart-within= applies only to preempt=restart (this script's mode is "
            "never); add preempt=restart or remove restart-within=");
  // The plan's mode replaces the header's, and the header's limit no longer fits it.
  write("again.sh", "#!/bin/bash\n#gpuq preempt=restart restart-within=1h\necho\n");
  EXPECT_EQ(error_of(R"([{"id": "a", "script": "again.sh", "preempt": "yield"}])"),
            "plan.json:1: job 'a': 'restart_within' applies only to \"preempt\": \"restart\" "
            "(this job's mode is yield); add \"preempt\": \"restart\" or remove it");
}

TEST(PlanText, ChecksTextWithScriptsFromTheReaderGiven) {
  std::vector<std::string> asked;
  ScriptReader read = [&](const std::string& path) -> Result<std::string> {
    asked.push_back(path);
    if (path == "/plans/jobs/train.sh") return std::string("#!/bin/bash\n#gpuq gpus=2\ntrue\n");
    if (path == "/plans/empty.sh") return fail(Code::kInvalidArgument, path + ": script is empty");
    return fail(Code::kNotFound, path);
  };
  PlanCheck check = check_plan_text(
      "/plans/plan.json",
      "[{\"id\": \"t\", \"script\": \"jobs/train.sh\"},\n"
      " {\"id\": \"e\", \"script\": \"empty.sh\"},\n"
      " {\"id\": \"m\", \"script\": \"nope.sh\"}]",
      PlanContext{"/work", {}}, read);
  EXPECT_EQ(asked, (std::vector<std::string>{"/plans/jobs/train.sh", "/plans/empty.sh",
                                             "/plans/nope.sh"}));
  ASSERT_EQ(check.diagnostics.size(), 2u);
  EXPECT_EQ(check.diagnostics[0].text(),
            "/plans/plan.json:2: error: job 'e': /plans/empty.sh: script is empty");
  EXPECT_EQ(check.diagnostics[1].text(),
            "/plans/plan.json:3: error: job 'm': no such script /plans/nope.sh (script paths are "
            "relative to the plan file's directory)");
  ASSERT_EQ(check.jobs.size(), 3u);
  EXPECT_EQ(check.jobs[0].gpus, 2);
}

// Found by fuzz/plan_fuzz.cc: nlohmann reports a number too large for a double as out_of_range,
// not parse_error, and the plan reader let it escape (std::terminate in `gpuq submit`/`lint`).
TEST(PlanText, ANumberTooLargeForADoubleIsAnErrorNamingItsLine) {
  auto no_scripts = [](const std::string& path) -> Result<std::string> {
    return fail(Code::kNotFound, path);
  };
  PlanCheck check = check_plan_text(
      "plan.json", "{\"jobs\": [\n  {\"id\": \"a\", \"command\": [\"true\"],\n   \"gpus\": 1e400}]}",
      PlanContext{"/work", {}}, no_scripts);
  ASSERT_EQ(check.diagnostics.size(), 1u);
  EXPECT_EQ(check.diagnostics[0].text(),
            "plan.json:3: error: not valid JSON: number overflow parsing '1e400'");
}

// A plan nested 100,000 deep took more than 2 GiB in JsonLines (a pointer string per value,
// each as long as the depth) and would overflow the stack in json copies: it is refused first.
TEST(PlanText, DeepNestingIsRefusedNamingItsLine) {
  std::string text = "{\"jobs\": [\n" + std::string(100'000, '[') + std::string(100'000, ']') + "]}";
  auto no_scripts = [](const std::string& path) -> Result<std::string> {
    return fail(Code::kNotFound, path);
  };
  PlanCheck check = check_plan_text("plan.json", text, PlanContext{"/work", {}}, no_scripts);
  ASSERT_EQ(check.diagnostics.size(), 1u);
  EXPECT_EQ(check.diagnostics[0].text().substr(0, 56),
            "plan.json:2: error: nested more than 32 levels deep; a p");
}

// Each value under a 1 MiB key used to store its own copy of the key in its pointer: 100,000
// values took 100 GiB. Values are now nodes of a tree, one copy of each key.
TEST(JsonLines, MemoryGrowsWithTheTextNotWithKeyLengthTimesValues) {
  std::string key(1 << 20, 'k');
  std::string text = "{\"" + key + "\": [\n0";
  for (int i = 1; i < 100'000; ++i) text += ",0";
  text += "],\n\"a/b~\": {\"x\": 1}}";
  JsonLines lines(text);
  EXPECT_EQ(lines.line(JsonLines::child("", key)), 1);
  EXPECT_EQ(lines.line(JsonLines::child(JsonLines::child("", key), 99'999)), 2);
  EXPECT_EQ(lines.line("/a~1b~0/x"), 3);
  EXPECT_EQ(lines.line("/a~1b~0/missing/0"), 3);
}

// A repeated key keeps its first value's line, and nothing inside the repeated value is
// looked up; an array's element tokens are plain decimal indexes.
TEST(JsonLines, RepeatedKeysKeepTheirFirstLineAndIndexesAreDecimal) {
  const std::string text =
      "{\"a\": {\"x\": 1},\n"
      " \"a\": {\"y\": 2},\n"
      " \"list\": [0,\n 1]}\n";
  JsonLines lines(text);
  EXPECT_EQ(lines.line("/a"), 1);
  EXPECT_EQ(lines.line("/a/x"), 1);
  EXPECT_EQ(lines.line("/a/y"), 1);  // the nearest ancestor: the first "a"
  EXPECT_EQ(lines.line("/list/1"), 4);
  EXPECT_EQ(lines.line("/list/01"), 3);
  EXPECT_EQ(lines.line("/list/-1"), 3);
  EXPECT_EQ(lines.line("/list/2"), 3);
}

// An object of many keys is searched, not scanned: each of 20,000 keys is found on its line.
TEST(JsonLines, FindsEachKeyOfALargeObject) {
  std::string text = "{";
  for (int i = 0; i < 20'000; ++i) text += fmt::format("{}\"k{}\": {}", i ? ",\n" : "", i, i);
  text += "}";
  JsonLines lines(text);
  for (int i = 0; i < 20'000; i += 997) EXPECT_EQ(lines.line(fmt::format("/k{}", i)), i + 1);
  EXPECT_EQ(lines.line("/k20000"), 1);
}

TEST(JsonLines, FindsTheLineOfEachValue) {
  const std::string text =
      "{\"jobs\": [\n"
      "  {\"id\": \"a\", \"deps\": [\"x\",\n"
      "     \"y\"]},\n"
      "  {\"id\": \"a/b~\",\n"
      "   \"n\": -1.5e3, \"t\": true, \"s\": \"q\\\"uote,]}\"},\n"
      "  [1,\n 2]\n"
      "], \"k\\u0041\": null}\n";
  json parsed;
  ASSERT_NO_THROW(parsed = json::parse(text));
  JsonLines lines(text);
  EXPECT_EQ(lines.line(""), 1);
  EXPECT_EQ(lines.line("/jobs"), 1);
  EXPECT_EQ(lines.line("/jobs/0"), 2);
  EXPECT_EQ(lines.line("/jobs/0/deps/0"), 2);
  EXPECT_EQ(lines.line("/jobs/0/deps/1"), 3);
  EXPECT_EQ(lines.line("/jobs/1"), 4);
  EXPECT_EQ(lines.line("/jobs/1/n"), 5);
  EXPECT_EQ(lines.line("/jobs/1/s"), 5);
  EXPECT_EQ(lines.line("/jobs/2"), 6);
  EXPECT_EQ(lines.line("/jobs/2/1"), 7);
  EXPECT_EQ(lines.line("/kA"), 8);
  EXPECT_EQ(lines.line("/jobs/1/missing"), 4);  // the nearest ancestor
  EXPECT_EQ(JsonLines::child("/jobs", "a/b~"), "/jobs/a~1b~0");
  EXPECT_EQ(line_of_offset("a\nb\nc", 4), 3);
}

}  // namespace
}  // namespace gpuq::spec

namespace gpuq::spec {
namespace {

TEST(FindCycles, ReportsEachCycleOnceFromTheEarliestNode) {
  using Path = std::vector<std::string>;
  EXPECT_EQ(find_cycles({"a", "b", "c"}, {{"a", {"b"}}, {"b", {"c", "outside"}}}),
            std::vector<Path>{});
  EXPECT_EQ(find_cycles({"a", "b", "c"}, {{"a", {"b"}}, {"b", {"c"}}, {"c", {"a"}}}),
            (std::vector<Path>{{"a", "b", "c", "a"}}));
  EXPECT_EQ(find_cycles({"x", "y", "z"}, {{"x", {"x"}}, {"y", {"z"}}, {"z", {"y"}}}),
            (std::vector<Path>{{"x", "x"}, {"y", "z", "y"}}));
  std::vector<std::string> chain;
  std::map<std::string, std::vector<std::string>> edges;
  for (int i = 0; i < 100000; ++i) {
    chain.push_back(std::to_string(i));
    if (i > 0) edges[std::to_string(i)] = {std::to_string(i - 1)};
  }
  EXPECT_TRUE(find_cycles(chain, edges).empty());
}

}  // namespace
}  // namespace gpuq::spec
