#include "api/submit_request.h"

#include <gtest/gtest.h>

namespace gpuq::api {
namespace {

using nlohmann::json;

TEST(SubmitRequest, ParsesACommand) {
  auto spec = parse_submit_request(json::parse(
      R"({"name":"eval","gpus":2,"priority":"high","cwd":"/tmp","env":{"A":"1"},"argv":["python","x.py"]})"));
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->name, "eval");
  EXPECT_EQ(spec->gpus, 2);
  EXPECT_EQ(spec->priority, 10);
  EXPECT_EQ(spec->argv, (std::vector<std::string>{"python", "x.py"}));
  EXPECT_EQ(spec->env.at("A"), "1");
}

TEST(SubmitRequest, ParsesAScript) {
  auto spec = parse_submit_request(json::parse(
      R"({"cwd":"/tmp","priority":7,"script":{"name":"t.sh","text":"echo hi\n","args":["a"]}})"));
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->priority, 7);
  EXPECT_EQ(spec->script_name, "t.sh");
  EXPECT_EQ(spec->script_args, (std::vector<std::string>{"a"}));
}

TEST(SubmitRequest, RefusesWhatItDoesNotUnderstand) {
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
    auto spec = parse_submit_request(json::parse(c.body));
    ASSERT_FALSE(spec) << c.body;
    EXPECT_NE(spec.error().message.find(c.message), std::string::npos)
        << c.body << " -> " << spec.error().message;
  }
}

}  // namespace
}  // namespace gpuq::api
