// SPDX-License-Identifier: Apache-2.0
#include "model/spec_json.h"

#include <gtest/gtest.h>

#include "model/limits.h"

namespace gpuq {
namespace {

using nlohmann::json;

TEST(SpecJson, ParsesACommand) {
  auto spec = spec_from_json(json::parse(
      R"({"name":"eval","gpus":2,"priority":"high","cwd":"/tmp","env":{"A":"1"},"argv":["python","x.py"]})"));
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->name, "eval");
  EXPECT_EQ(spec->gpus, 2);
  EXPECT_EQ(spec->priority, 10);
  EXPECT_EQ(spec->argv, (std::vector<std::string>{"python", "x.py"}));
  EXPECT_EQ(spec->env.at("A"), "1");
}

TEST(SpecJson, ParsesAScript) {
  auto spec = spec_from_json(json::parse(
      R"({"cwd":"/tmp","priority":7,"script":{"name":"t.sh","text":"echo hi\n","args":["a"]}})"));
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->priority, 7);
  EXPECT_EQ(spec->script_name, "t.sh");
  EXPECT_EQ(spec->script_args, (std::vector<std::string>{"a"}));
}

// "gpu" is the GPU lane (model/job.h): not kept among the lanes; the job holds a GPU, one unless
// it asks for more; asking for 0 GPUs and the GPU lane is refused.
TEST(SpecJson, TheGpuLaneAsksForAGpuAndIsNotKeptAsALane) {
  auto one = spec_from_json(json::parse(R"({"argv":["x"],"lanes":["net","gpu"]})"));
  ASSERT_TRUE(one) << one.error().message;
  EXPECT_EQ(one->lanes, (std::vector<std::string>{"net"}));
  EXPECT_EQ(one->gpus, 1);
  auto four = spec_from_json(json::parse(R"({"argv":["x"],"lane":"gpu","gpus":4})"));
  ASSERT_TRUE(four) << four.error().message;
  EXPECT_TRUE(four->lanes.empty());
  EXPECT_EQ(four->gpus, 4);
  auto none = spec_from_json(json::parse(R"({"argv":["x"],"lane":"gpu","gpus":0})"));
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message,
            "lane 'gpu' is the GPU lane, whose jobs hold a GPU, and 'gpus' is 0: remove the lane, "
            "or ask for one GPU or more");
  auto stored = spec_from_json(spec_to_json(*one), SpecOrigin::kStore);
  ASSERT_TRUE(stored) << stored.error().message;
  EXPECT_EQ(stored->gpus, 1);
  EXPECT_EQ(stored->lanes, (std::vector<std::string>{"net"}));
}

// Element names (docs/sweeps.md) hold ',' and '=' inside their brackets; the base of a name,
// and what is inside the brackets otherwise, keep the rule of every name.
TEST(SpecJson, ElementNamesMayHoldCommasInTheirBrackets) {
  for (const char* good : {"grid[lr=3e-4,seed=2]", "shards[7]", "a.b-c_d[x=1]"}) {
    auto spec = spec_from_json(json{{"argv", {"x"}}, {"name", good}});
    ASSERT_TRUE(spec) << good << ": " << spec.error().message;
    EXPECT_EQ(spec->name, good);
  }
  for (const char* bad : {"a,b", "a,b[1]", "x[]", "x[a/b]", "x[a:b]", "x[1]]", "x[[1]", "x[1", "x]",
                          "x[a b]"}) {
    auto spec = spec_from_json(json{{"argv", {"x"}}, {"name", bad}});
    ASSERT_FALSE(spec) << bad;
    EXPECT_NE(spec.error().message.find("bad job name"), std::string::npos) << bad;
  }
}

TEST(SpecJson, RefusesWhatItDoesNotUnderstand) {
  struct Case { const char* body; const char* message; };
  for (Case c : {Case{R"({"argv":["x"],"gpu":1})", "unknown field 'gpu'"},
                 Case{R"({"argv":["x"],"gpus":"two"})", "'gpus' must be an integer"},
                 Case{R"({"argv":[]})", "'argv' is empty"},
                 Case{R"({"argv":["x"],"script":{"text":"y"}})", "exactly one of"},
                 Case{R"({})", "exactly one of"},
                 Case{R"({"argv":["x"],"priority":"urgent"})", "bad priority"},
                 Case{R"({"argv":["x"],"name":"42"})", "bad job name"},
                 Case{R"({"script":{"text":"y","mode":1}})", "unknown field 'script.mode'"},
                 Case{R"({"argv":["x"],"env":{"A":1}})", "env value of 'A'"}}) {
    auto spec = spec_from_json(json::parse(c.body));
    ASSERT_FALSE(spec) << c.body;
    EXPECT_NE(spec.error().message.find(c.message), std::string::npos)
        << c.body << " -> " << spec.error().message;
  }
}

}  // namespace
}  // namespace gpuq

namespace gpuq {
namespace {

// An unknown key or dependency kind was echoed whole: an 8 MiB key made an 8 MiB message.
TEST(SpecJson, MessagesStaySmallWhateverWasSent) {
  std::string huge(8 << 20, 'k');
  std::vector<json> bodies = {
      json{{"cwd", "/tmp"}, {"argv", {"true"}}, {huge, 1}},
      json{{"cwd", "/tmp"}, {"argv", {"true"}}, {"deps", {{{"kind", huge}, {"target", "x"}}}}},
      json{{"cwd", "/tmp"}, {"argv", {"true"}}, {"deps", {{{"kind", "afterok"}, {"target", "x"}, {huge, 1}}}}},
      json{{"cwd", "/tmp"}, {"script", {{"name", "a.sh"}, {"text", "true\n"}, {huge, 1}}}}};
  for (const json& body : bodies) {
    auto spec = spec_from_json(body);
    ASSERT_FALSE(spec);
    EXPECT_LT(spec.error().message.size(), 300u) << spec.error().message.substr(0, 200);
    EXPECT_NE(spec.error().message.find("kkk..."), std::string::npos) << spec.error().message.substr(0, 200);
  }
}

TEST(SpecJson, ParsesTheSchedulingFields) {
  auto spec = spec_from_json(json::parse(R"({
    "argv": ["python", "eval.py"], "after": ["train", "7"], "after_any": "prep",
    "after_notok": ["canary"], "requires": "test -f ckpt/READY", "wait_file": ["data/x.json"],
    "done_if": "test -s out.json", "lane": "net", "retries": 2, "retry_delay": "30s",
    "timeout": "12h", "est_ms": 5000, "gpu_mem": 20000, "share": true,
    "not_before": "2026-11-29T22:00:00Z", "hold": true, "inputs": ["a"], "outputs": ["b/*.json"],
    "source": "plan.json:4"})"));
  ASSERT_TRUE(spec) << spec.error().message;
  ASSERT_EQ(spec->deps.size(), 6u);
  EXPECT_EQ(spec->deps[0].kind, Dependency::Kind::kAfterOk);
  EXPECT_EQ(spec->deps[1].target, "7");
  EXPECT_EQ(spec->deps[2].kind, Dependency::Kind::kAfterAny);
  EXPECT_EQ(spec->deps[3].kind, Dependency::Kind::kAfterNotOk);
  EXPECT_EQ(spec->deps[4].kind, Dependency::Kind::kFile);
  EXPECT_EQ(spec->deps[5].kind, Dependency::Kind::kRequires);
  EXPECT_EQ(spec->lanes, std::vector<std::string>{"net"});
  EXPECT_EQ(spec->retry_delay_ms, 30'000);
  EXPECT_EQ(spec->timeout_ms, 12 * 3'600'000);
  EXPECT_EQ(spec->estimate_ms, 5000);
  EXPECT_TRUE(spec->share);
  EXPECT_TRUE(spec->hold);
  EXPECT_EQ(spec->not_before_ms, 1795989600000);
}

TEST(SpecJson, StoredFormRoundTrips) {
  auto spec = spec_from_json(json::parse(R"({
    "name": "eval", "gpus": 2, "priority": 10, "cwd": "/w", "env": {"A": "1"},
    "script": {"name": "e.sh", "text": "echo\n", "args": ["x"]}, "after": "train",
    "requires": "true", "lanes": ["net", "cpu"], "retries": 1, "retry_delay_ms": 0,
    "timeout": "1h", "est": "30m", "reservation": "r0", "source": "plan.json:9"})"));
  ASSERT_TRUE(spec) << spec.error().message;
  spec->deps[0].job_id = 4;
  auto again = spec_from_json(spec_to_json(*spec));
  ASSERT_TRUE(again) << again.error().message << "\n" << spec_to_json(*spec).dump();
  EXPECT_TRUE(same_work(*spec, *again));
  EXPECT_EQ(again->deps[0].job_id, 4);
  EXPECT_EQ(again->retry_delay_ms, 0);
  EXPECT_EQ(again->source, "plan.json:9");
  EXPECT_EQ(again->script_args, std::vector<std::string>{"x"});
}

// A not_before before 1970 was accepted, but its stored form (negative not_before_ms) was not:
// the stored job could not be read back (found by fuzz/plan_fuzz.cc's round trip).
TEST(SpecJson, NotBeforeBeforeTheEpochIsRefused) {
  auto spec = spec_from_json(json::parse(R"({"argv": ["x"], "not_before": "1969-12-31T23:00:00Z"})"));
  ASSERT_FALSE(spec) << spec_to_json(*spec).dump();
  EXPECT_NE(spec.error().message.find("it must be after 1970"), std::string::npos)
      << spec.error().message;
  auto epoch = spec_from_json(json::parse(R"({"argv": ["x"], "not_before": "1970-01-01T00:00:00Z"})"));
  ASSERT_TRUE(epoch) << epoch.error().message;
  auto again = spec_from_json(spec_to_json(*epoch));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->not_before_ms, 0);
}

TEST(SpecJson, ErrorsNameTheSource) {
  auto spec = spec_from_json(json::parse(R"({"argv": ["x"], "timeout": "soon", "source": "plan.json:12"})"));
  ASSERT_FALSE(spec);
  EXPECT_EQ(spec.error().message.rfind("plan.json:12: field 'timeout'", 0), 0u) << spec.error().message;
  auto share = spec_from_json(json::parse(R"({"argv": ["x"], "share": true})"));
  ASSERT_FALSE(share);
  EXPECT_NE(share.error().message.find("needs 'gpu_mem'"), std::string::npos);
  auto kind = spec_from_json(json::parse(R"({"argv": ["x"], "deps": [{"kind": "before", "target": "a"}]})"));
  ASSERT_FALSE(kind);
  EXPECT_NE(kind.error().message.find("unknown dependency kind 'before'"), std::string::npos);
}

}  // namespace
}  // namespace gpuq

namespace gpuq {
namespace {

TEST(SpecJson, PreemptionFields) {
  auto yield = spec_from_json(json::parse(R"({"argv": ["x"], "preempt": "yield"})"));
  ASSERT_TRUE(yield) << yield.error().message;
  EXPECT_EQ(yield->preempt, PreemptMode::kYield);
  EXPECT_EQ(yield->restart_within_ms, 0);

  auto never = spec_from_json(json::parse(R"({"argv": ["x"], "preempt": "never"})"));
  ASSERT_TRUE(never) << never.error().message;
  EXPECT_EQ(never->preempt, PreemptMode::kNever);

  auto within = spec_from_json(
      json::parse(R"({"argv": ["x"], "preempt": "restart", "restart_within": "30m"})"));
  ASSERT_TRUE(within) << within.error().message;
  EXPECT_EQ(within->preempt, PreemptMode::kRestart);
  EXPECT_EQ(within->restart_within_ms, 30 * 60'000);

  auto ms = spec_from_json(
      json::parse(R"({"argv": ["x"], "preempt": "restart", "restart_within_ms": 5000})"));
  ASSERT_TRUE(ms) << ms.error().message;
  EXPECT_EQ(ms->restart_within_ms, 5000);

  auto always = spec_from_json(json::parse(R"({"argv": ["x"], "preempt": "restart"})"));
  ASSERT_TRUE(always) << always.error().message;
  EXPECT_EQ(always->restart_within_ms, 0);
}

TEST(SpecJson, PreemptionErrors) {
  struct Case { const char* body; const char* message; };
  for (Case c : {
           Case{R"({"argv":["x"],"preempt":"sometimes"})",
                "bad preempt mode 'sometimes': use yield (the job saves its state and exits 75), "
                "restart (killed and rerun) or never"},
           Case{R"({"argv":["x"],"preempt":true})",
                "field 'preempt' must be \"yield\", \"restart\" or \"never\""},
           Case{R"({"argv":["x"],"preempt":"Yield"})", "bad preempt mode 'Yield'"},
           Case{R"({"argv":["x"],"restart_within":"30m"})",
                "'restart_within' applies only to \"preempt\": \"restart\" (this job's mode is "
                "never); add \"preempt\": \"restart\" or remove it"},
           Case{R"({"argv":["x"],"preempt":"yield","restart_within":"30m"})",
                "(this job's mode is yield)"},
           Case{R"({"argv":["x"],"preempt":"never","restart_within_ms":1000})",
                "'restart_within' applies only to"},
           Case{R"({"argv":["x"],"preempt":"restart","restart_within":"soon"})",
                "field 'restart_within': bad duration 'soon'"},
           Case{R"({"argv":["x"],"preempt":"restart","restart_within":30})",
                "field 'restart_within' must be a duration such as \"2h\""},
           Case{R"({"argv":["x"],"preempt":"restart","restart_within_ms":-1})",
                "field 'restart_within_ms' is -1; it must be between 0 and"},
           Case{R"({"argv":["x"],"preempt":"restart","restart_within":"1h","restart_within_ms":1})",
                "give 'restart_within' or 'restart_within_ms', not both"},
       }) {
    auto spec = spec_from_json(json::parse(c.body));
    ASSERT_FALSE(spec) << c.body;
    EXPECT_NE(spec.error().message.find(c.message), std::string::npos)
        << c.body << " -> " << spec.error().message;
  }
  auto located = spec_from_json(
      json::parse(R"({"argv":["x"],"restart_within":"1h","source":"plan.json:3"})"));
  ASSERT_FALSE(located);
  EXPECT_EQ(located.error().message.rfind("plan.json:3: 'restart_within' applies only", 0), 0u)
      << located.error().message;
}

TEST(SpecJson, PreemptionStoredForm) {
  JobSpec spec;
  spec.argv = {"x"};
  spec.cwd = "/w";
  json plain = spec_to_json(spec);
  EXPECT_FALSE(plain.contains("preempt")) << plain;  // the default is left out
  EXPECT_FALSE(plain.contains("restart_within_ms")) << plain;

  spec.preempt = PreemptMode::kRestart;
  spec.restart_within_ms = 1'800'000;
  json stored = spec_to_json(spec);
  EXPECT_EQ(stored["preempt"], "restart");
  EXPECT_EQ(stored["restart_within_ms"], 1'800'000);
  auto again = spec_from_json(stored);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->preempt, PreemptMode::kRestart);
  EXPECT_EQ(again->restart_within_ms, 1'800'000);
  EXPECT_TRUE(same_work(spec, *again));

  spec.preempt = PreemptMode::kYield;
  spec.restart_within_ms = 0;
  EXPECT_EQ(spec_to_json(spec)["preempt"], "yield");
  EXPECT_FALSE(same_work(spec, *again));  // a different mode is a different job
}

TEST(SpecJson, SpecsStoredBeforePreemptionReadAsNever) {
  // A spec as the store kept it before the preemption fields existed.
  auto old = spec_from_json(json::parse(R"({
    "gpus": 1, "priority": 50, "cwd": "/w", "env": {}, "name": "train",
    "script": {"name": "t.sh", "text": "echo\n", "args": []}, "retries": 1,
    "timeout_ms": 3600000, "source": "plan.json:2"})"));
  ASSERT_TRUE(old) << old.error().message;
  EXPECT_EQ(old->preempt, PreemptMode::kNever);
  EXPECT_EQ(old->restart_within_ms, 0);
}

}  // namespace
}  // namespace gpuq

namespace gpuq {
namespace {

TEST(SpecJson, WatcherLimitsRoundTripAndDefaultToTheConfig) {
  auto plain = spec_from_json(json::parse(R"({"argv": ["x"]})"));
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_EQ(plain->requires_warn_ms, -1);  // the daemon's [watch] setting
  EXPECT_EQ(plain->quiet_ms, -1);
  EXPECT_EQ(plain->warn_after_ms, 0);
  EXPECT_FALSE(spec_to_json(*plain).contains("quiet_ms"));

  auto set = spec_from_json(json::parse(
      R"({"argv": ["x"], "requires_warn": "2h", "quiet": "0s", "warn_after_ms": 5000})"));
  ASSERT_TRUE(set) << set.error().message;
  EXPECT_EQ(set->requires_warn_ms, 2 * 3'600'000);
  EXPECT_EQ(set->quiet_ms, 0);  // off for this job
  EXPECT_EQ(set->warn_after_ms, 5000);
  auto again = spec_from_json(spec_to_json(*set));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(same_work(*set, *again));
  EXPECT_FALSE(same_work(*set, *plain));

  auto bad = spec_from_json(json::parse(R"({"argv": ["x"], "quiet": 30})"));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("field 'quiet' must be a duration"), std::string::npos);
}

}  // namespace
}  // namespace gpuq

namespace gpuq {
namespace {

// Values the daemon would overflow on or hand to the OS wrongly are refused, naming the field.
TEST(SpecJson, RefusesValuesOutOfRangeNamingTheField) {
  struct Case { std::string body; const char* message; };
  std::string cmd = R"("argv":["x"])";
  for (const Case& c : std::vector<Case>{
           {"{" + cmd + R"(,"not_before":"2400-01-01T00:00:00Z"})", "field 'not_before' is 2400-01-01T00:00:00Z; it must be after 1970 and before 2100-01-01T00:00:00Z"},
           {"{" + cmd + R"(,"not_before":"2026-13-01T00:00:00Z"})", "field 'not_before': bad time"},
           {"{" + cmd + R"(,"not_before_ms":13569465600000})", "field 'not_before_ms' is 13569465600000"},
           {"{" + cmd + R"(,"not_before":13569465600000})", "field 'not_before' is 13569465600000"},
           {"{" + cmd + R"(,"not_before":"2026-11-29T22:00:00Z","not_before_ms":1})", "not both"},
           {"{" + cmd + R"(,"timeout_ms":1000000000000000})", "field 'timeout_ms' is 1000000000000000; it must be between 0 and 31536000000 (365d)"},
           {"{" + cmd + R"(,"timeout":"400d"})", "field 'timeout' is 400d00h; it must be at most 365d"},
           {"{" + cmd + R"(,"est_ms":-1})", "field 'est_ms' is -1"},
           {"{" + cmd + R"(,"retry_delay_ms":18446744073709551615})", "field 'retry_delay_ms' is 18446744073709551615"},
           {"{" + cmd + R"(,"quiet":"366d"})", "field 'quiet'"},
           {"{" + cmd + R"(,"requires_warn_ms":99999999999999})", "field 'requires_warn_ms'"},
           {"{" + cmd + R"(,"warn_after":"9999d"})", "field 'warn_after'"},
           {"{" + cmd + R"(,"preempt":"restart","restart_within_ms":31536000001})", "field 'restart_within_ms'"},
           {"{" + cmd + R"(,"gpus":1025})", "field 'gpus' is 1025; it must be between 0 and 1024"},
           {"{" + cmd + R"(,"gpus":9223372036854775808})", "field 'gpus' is 9223372036854775808"},
           {"{" + cmd + R"(,"gpus":1.5})", "field 'gpus' must be an integer"},
           {"{" + cmd + R"(,"retries":1001})", "field 'retries' is 1001"},
           {"{" + cmd + R"(,"gpu_mem":-5})", "field 'gpu_mem' is -5"},
           {"{" + cmd + R"(,"priority":1001})", "field 'priority': bad priority '1001'"},
           {"{" + cmd + R"(,"priority":true})", "field 'priority' must be high, normal, low or an integer 0..1000"},
           {"{" + cmd + R"(,"priority":18446744073709551615})", "field 'priority' must be"},
           {"{" + cmd + R"(,"env":{"A=B":"1"}})", "env variable name 'A=B' contains '='"},
           {"{" + cmd + R"(,"env":{"":"1"}})", "env has a variable with an empty name"},
           {"{" + cmd + R"(,"env":{"A\u0000B":"1"}})", "env variable name contains a NUL byte"},
           {"{" + cmd + R"(,"env":{"A":"x\u0000y"}})", "env value of 'A' contains a NUL byte"},
           {R"({"argv":["x\u0000y"]})", "field 'argv' contains a NUL byte"},
           {"{" + cmd + R"(,"cwd":"/tmp\u0000/x"})", "field 'cwd' contains a NUL byte"},
           {R"({"script":{"text":"echo","name":5}})", "field 'script.name' must be a string"},
           {R"({"script":{"text":"echo","args":[1]}})", "field 'script.args' must be a list of strings"},
           {"{" + cmd + R"(,"deps":[{"kind":"afterok","target":"7","job_id":"7"}]})", "field 'deps[].job_id' must be a job id"},
           {"{" + cmd + R"(,"deps":[{"kind":"afterok","target":"7","job_id":0}]})", "field 'deps[].job_id' must be a job id"},
           {"{" + cmd + R"(,"deps":[{"kind":"afterok","target":"7","jobid":7}]})", "unknown field 'deps[].jobid'"},
           {"{" + cmd + R"(,"source":"plan.json:3","gpus":-1})", "plan.json:3: field 'gpus' is -1"}}) {
    auto spec = spec_from_json(json::parse(c.body));
    ASSERT_FALSE(spec) << c.body;
    EXPECT_EQ(spec.error().code, Code::kInvalidArgument) << c.body;
    EXPECT_NE(spec.error().message.find(c.message), std::string::npos)
        << c.body << " -> " << spec.error().message;
  }
}

TEST(SpecJson, AcceptsTheEdgesOfEachRange) {
  auto spec = spec_from_json(json::parse(R"({"argv":["x"],"timeout_ms":31536000000,"est":"365d",
      "not_before":"2099-12-31T23:59:59.999Z","gpus":1024,"retries":1000,"priority":1000,
      "env":{"A":"","BASH_FUNC_f%%":"() { :; }"},"deps":[{"kind":"afterok","target":"7","job_id":7}]})"));
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->timeout_ms, 31'536'000'000);
  EXPECT_EQ(spec->estimate_ms, 31'536'000'000);
  EXPECT_EQ(spec->not_before_ms, 4'102'444'799'999);
  EXPECT_EQ(spec->priority, 1000);
  EXPECT_EQ(spec->deps.at(0).job_id, 7);
}

// The fleet agent's claim deadline file: kept by the store, never accepted from a request (the
// shim reads the file it names).
TEST(SpecJson, AClaimDeadlineFileIsTheStoresOnly) {
  JobSpec spec;
  spec.argv = {"x"};
  spec.fleet_id = "0abc";
  spec.claim_deadline_file = "/home/n/fleet-deadlines/0abc.1.deadline";
  auto stored = spec_from_json(spec_to_json(spec), SpecOrigin::kStore);
  ASSERT_TRUE(stored) << stored.error().message;
  EXPECT_EQ(stored->claim_deadline_file, spec.claim_deadline_file);
  auto requested = spec_from_json(spec_to_json(spec));
  ASSERT_FALSE(requested);
  EXPECT_NE(requested.error().message.find("'claim_deadline_file' is set by a node's fleet agent only"),
            std::string::npos)
      << requested.error().message;
  spec.claim_deadline_file.clear();
  EXPECT_FALSE(spec_to_json(spec).contains("claim_deadline_file")) << "a local job's spec reads as before";
}

TEST(SpecJson, Int64OfJsonNumbers) {
  EXPECT_EQ(json_int64(json::parse("9223372036854775807")), INT64_MAX);
  EXPECT_EQ(json_int64(json::parse("-9223372036854775808")), INT64_MIN);
  EXPECT_EQ(json_int64(json::parse("9223372036854775808")), std::nullopt);
  EXPECT_EQ(json_int64(json::parse("1.0")), std::nullopt);
  EXPECT_EQ(json_int64(json::parse("\"1\"")), std::nullopt);
}

}  // namespace
}  // namespace gpuq

namespace gpuq {
namespace {

TEST(SpecJsonSteps, ParsesScriptAndCommandStepsAndRoundTrips) {
  auto spec = spec_from_json(json::parse(R"({"cwd":"/tmp","gpus":2,"steps":[
      {"script":{"name":"/home/a/prepare.sh","text":"echo prep\n","args":[]}},
      {"argv":["train.sh","--lr","3e-4"],"timeout":"2h","done_if":"test -f done"},
      {"name":"export","argv":["x"],"image":"busybox:latest"}]})"));
  ASSERT_TRUE(spec) << spec.error().message;
  ASSERT_EQ(spec->steps.size(), 3u);
  EXPECT_EQ(spec->steps[0].name, "prepare.sh");
  EXPECT_EQ(spec->steps[0].script_text, "echo prep\n");
  EXPECT_EQ(spec->steps[1].name, "train.sh --lr 3e-4");
  EXPECT_EQ(spec->steps[1].timeout_ms, 2 * 3600 * 1000);
  EXPECT_EQ(spec->steps[1].done_if, "test -f done");
  EXPECT_EQ(spec->steps[2].name, "export");
  EXPECT_EQ(spec->steps[2].image, "busybox:latest");
  EXPECT_TRUE(spec->argv.empty());
  auto again = spec_from_json(spec_to_json(*spec), SpecOrigin::kStore);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->steps, spec->steps);
  EXPECT_TRUE(same_work(*spec, *again));
  JobSpec other = *spec;
  other.steps[1].argv.back() = "1e-3";
  EXPECT_FALSE(same_work(*spec, other));
}

TEST(SpecJsonSteps, RefusesBadStepsNamingTheStep) {
  struct Case {
    const char* body;
    const char* says;
  };
  for (const Case& c : {
           Case{R"({"steps":[]})", "'steps' is empty"},
           Case{R"({"steps":{}})", "must be a list of steps"},
           Case{R"({"argv":["x"],"steps":[{"argv":["y"]}]})", "not both"},
           Case{R"({"steps":[{"argv":["y"]},{"argv":[]}]})", "steps[1]: field 'argv' is empty"},
           Case{R"({"steps":[{"argv":["y"],"script":{"text":"x"}}]})", "steps[0]: give exactly one"},
           Case{R"({"steps":[{"argv":["y"],"retries":2}]})", "steps[0]: unknown field 'retries'"},
           Case{R"({"steps":[{"argv":["y"],"timeout":"soon"}]})", "steps[0]: field 'timeout'"},
           Case{R"({"steps":["echo"]})", "steps[0]: a step must be an object"},
           Case{R"({"argv":["y"],"pull":"always"})", "'pull' applies only to container jobs"},
           Case{R"({"argv":["y"],"image":"busybox","pull":"sometimes"})", "always, missing, never"},
           Case{R"({"source":"plan.json:7","steps":[{"argv":["y"],"done_if":7}]})",
                "plan.json:7: steps[0]: field 'done_if' must be a string"},
       }) {
    auto spec = spec_from_json(json::parse(c.body));
    ASSERT_FALSE(spec) << c.body;
    EXPECT_NE(spec.error().message.find(c.says), std::string::npos) << c.body << " -> " << spec.error().message;
  }
  json many = {{"steps", json::array()}};
  for (int i = 0; i <= limits::kMaxSteps; ++i) many["steps"].push_back({{"argv", {"x"}}});
  auto spec = spec_from_json(many);
  ASSERT_FALSE(spec);
  EXPECT_NE(spec.error().message.find("at most"), std::string::npos);
}

TEST(SpecJsonSteps, ContainerFieldsRoundTrip) {
  auto spec = spec_from_json(json::parse(
      R"({"argv":["nvidia-smi"],"image":"nvcr.io/nvidia/pytorch:24.01-py3","pull":"never","container_user":"0:0"})"));
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->image, "nvcr.io/nvidia/pytorch:24.01-py3");
  EXPECT_EQ(spec->pull, PullPolicy::kNever);
  EXPECT_EQ(spec->container_user, "0:0");
  auto again = spec_from_json(spec_to_json(*spec), SpecOrigin::kStore);
  ASSERT_TRUE(again);
  EXPECT_TRUE(same_work(*spec, *again));
  EXPECT_EQ(again->pull, PullPolicy::kNever);
}

TEST(SpecJsonSteps, RefusesBadImagesAndUsersNamingTheField) {
  struct Case {
    const char* body;
    const char* says;
  };
  for (const Case& c : {
           Case{R"({"argv":["y"],"image":"Busybox"})",
                "field 'image': 'Busybox' is not an image reference"},
           Case{R"({"argv":["y"],"image":""})",
                "field 'image': '' is not an image reference: it is empty"},
           Case{R"({"steps":[{"argv":["y"]},{"argv":["z"],"image":"a b"}]})",
                "steps[1]: field 'image': 'a b' is not an image reference"},
           Case{R"({"source":"plan.json:3","steps":[{"argv":["y"],"image":"x:"}]})",
                "plan.json:3: steps[0]: field 'image'"},
           Case{R"({"argv":["y"],"image":"busybox","container_user":"me me"})",
                "field 'container_user': 'me me' is not a container user"},
       }) {
    auto spec = spec_from_json(json::parse(c.body));
    ASSERT_FALSE(spec) << c.body;
    EXPECT_NE(spec.error().message.find(c.says), std::string::npos)
        << c.body << " -> " << spec.error().message;
  }
  // A stored spec is read as it was accepted, even should the check grow stricter.
  auto stored = spec_from_json(
      json::parse(R"({"argv":["y"],"image":"Old","container_user":"x y"})"), SpecOrigin::kStore);
  ASSERT_TRUE(stored) << stored.error().message;
  EXPECT_EQ(stored->image, "Old");
  // A step's image alone makes a container job: pull and container_user apply.
  auto step_image = spec_from_json(json::parse(
      R"({"steps":[{"argv":["y"],"image":"busybox"}],"pull":"always","container_user":"1000:1000"})"));
  ASSERT_TRUE(step_image) << step_image.error().message;
  EXPECT_EQ(step_image->pull, PullPolicy::kAlways);
}

TEST(SpecJsonSteps, OneStepOnItsOwn) {
  auto step = step_from_json(json::parse(R"({"argv":["make","data"],"timeout":"30m"})"));
  ASSERT_TRUE(step) << step.error().message;
  EXPECT_EQ(step->name, "make data");
  EXPECT_EQ(step->timeout_ms, 30 * 60 * 1000);
  auto bad = step_from_json(json::parse(R"({"argv":["x"],"image":"A"})"));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message.rfind("field 'image': 'A' is not an image reference", 0), 0u)
      << bad.error().message;
}

}  // namespace
}  // namespace gpuq
