#include "model/spec_json.h"

#include <gtest/gtest.h>

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
  EXPECT_NE(spec.error().message.find("field 'not_before' is before 1970"), std::string::npos)
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
