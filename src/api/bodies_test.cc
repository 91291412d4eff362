// SPDX-License-Identifier: Apache-2.0
#include "api/bodies.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "api/request_check.h"
#include "model/limits.h"

namespace gpuq::api {
namespace {

using nlohmann::json;
using Where = daemon::MoveRequest::Where;

std::string nested(int depth, std::string_view inner = "1") {
  return std::string(static_cast<size_t>(depth), '[') + std::string(inner) +
         std::string(static_cast<size_t>(depth), ']');
}

// The error of a decoder that must refuse; fails the test when it accepts.
template <class T>
std::string refusal(const Result<T>& result) {
  if (result) {
    ADD_FAILURE() << "accepted";
    return "";
  }
  EXPECT_EQ(result.error().code, Code::kInvalidArgument);
  return result.error().message;
}

#define EXPECT_REFUSED(expr, text)                                              \
  do {                                                                          \
    std::string message_ = refusal(expr);                                       \
    EXPECT_NE(message_.find(text), std::string::npos) << #expr << " -> " << message_; \
  } while (0)

TEST(ParseJsonBody, NestingIsLimitedWhileParsing) {
  EXPECT_TRUE(parse_json_body(nested(limits::kMaxJsonDepth)));
  EXPECT_REFUSED(parse_json_body(nested(limits::kMaxJsonDepth + 1)), "more than 64 deep");
  // 600 KB of nesting inside an object, as sent to /v1/jobs/1/move: refused at depth 65,
  // without building (or later dumping) the rest.
  std::string deep = "{\"before\":" + nested(300'000) + "}";
  EXPECT_REFUSED(parse_json_body(deep), "more than 64 deep");
  EXPECT_REFUSED(decode_move(deep), "more than 64 deep");
  EXPECT_REFUSED(parse_json_body(std::string(600'000, '[')), "more than 64 deep");
  EXPECT_REFUSED(parse_json_body("{\"a\":" + nested(64, "{}") + "}"), "more than 64 deep");
}

TEST(ParseJsonBody, ErrorsNeverEchoTheBody) {
  std::string unterminated = "{\"argv\": [\"" + std::string(100'000, 'x');
  std::string message = refusal(parse_json_body(unterminated));
  EXPECT_NE(message.find("not valid JSON"), std::string::npos) << message;
  EXPECT_LT(message.size(), 200u) << message;
  EXPECT_REFUSED(parse_json_body(""), "not valid JSON");
  EXPECT_REFUSED(parse_json_body("{} trailing"), "not valid JSON");
  EXPECT_REFUSED(parse_json_body(std::string(limits::kMaxBodyBytes + 1, ' ')), "larger than 8 MiB");
}

// Found by fuzz/http_request_fuzz.cc: nlohmann reports a number too large for a double as
// out_of_range, not parse_error, and parse_json_body caught only the latter, so the exception
// left every decoder: the daemon answered such a body 500 internal ("this is a bug").
TEST(ParseJsonBody, ANumberTooLargeForADoubleIsInvalid) {
  EXPECT_REFUSED(parse_json_body("{\"dry_run\": 1e400}"), "a number too large for a double");
  EXPECT_REFUSED(decode_gc("[1e400]"), "not valid JSON");
  EXPECT_REFUSED(decode_submit(R"({"argv":["true"],"gpus":-1e400})"), "not valid JSON");
  EXPECT_REFUSED(decode_move(R"({"before":1e400})"), "not valid JSON");
  std::string huge = "[1" + std::string(100'000, '0') + ".0]";  // never quoted back
  EXPECT_LT(refusal(parse_json_body(huge)).size(), 200u);
  // The fuzzer's input, minimised (fuzz/regressions/http_request/number_overflow_1e400).
  EXPECT_EQ(answer_status_for(
                "POST v1/gc HTTP/1.1\r\nContent-Length:17\r\n\r\n{\"dry_rn\": 1e400t"),
            400);
}

TEST(DecodeArrayAction, TakesAnEmptyBodyAndRetrysFailedFlagOnly) {
  using daemon::ArrayAction;
  auto action = [](std::string_view verb, std::string_view body) {
    auto decoded = decode_array_action(verb, body);
    return decoded ? std::optional<ArrayAction>(decoded->action) : std::nullopt;
  };
  EXPECT_EQ(action("cancel", ""), ArrayAction::kCancel);
  EXPECT_EQ(action("hold", "{}"), ArrayAction::kHold);
  EXPECT_EQ(action("release", ""), ArrayAction::kRelease);
  EXPECT_EQ(action("retry", R"({"failed": false})"), ArrayAction::kRetry);
  EXPECT_EQ(action("retry", R"({"failed": true})"), ArrayAction::kRetryFailed);
  EXPECT_REFUSED(decode_array_action("hold", R"({"failed": true})"), "unknown field 'failed'; send {} or no body");
  EXPECT_REFUSED(decode_array_action("retry", R"({"failed": "yes"})"), "field 'failed' must be true or false, not string");
  EXPECT_REFUSED(decode_array_action("retry", "[]"), "the body must be a JSON object");
  EXPECT_REFUSED(decode_array_action("start", ""), "an array takes move, cancel, hold, release or retry, not 'start'");
}

TEST(DecodeArrayAction, RetryTakesFromStartBesideFailed) {
  auto both = decode_array_action("retry", R"({"failed": true, "from_start": true})");
  ASSERT_TRUE(both);
  EXPECT_EQ(both->action, daemon::ArrayAction::kRetryFailed);
  EXPECT_TRUE(both->from_start);
  auto plain = decode_array_action("retry", "");
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->from_start);
  EXPECT_REFUSED(decode_array_action("retry", R"({"from_start": 1})"),
                 "field 'from_start' must be true or false, not number");
  EXPECT_REFUSED(decode_array_action("cancel", R"({"from_start": true})"),
                 "unknown field 'from_start'");
}

TEST(DecodeArrayAction, EveryActionTakesBrief) {
  for (std::string_view verb : {"cancel", "hold", "release", "retry"}) {
    auto brief = decode_array_action(verb, R"({"brief": true})");
    ASSERT_TRUE(brief) << verb << ": " << brief.error().message;
    EXPECT_TRUE(brief->brief) << verb;
    auto full = decode_array_action(verb, R"({"brief": false})");
    ASSERT_TRUE(full) << verb;
    EXPECT_FALSE(full->brief) << verb;
    auto none = decode_array_action(verb, "");
    ASSERT_TRUE(none) << verb;
    EXPECT_FALSE(none->brief) << verb << ": the jobs, as before, unless asked";
  }
  auto retry = decode_array_action("retry", R"({"brief": true, "failed": true})");
  ASSERT_TRUE(retry);
  EXPECT_EQ(retry->action, daemon::ArrayAction::kRetryFailed);
  EXPECT_TRUE(retry->brief);
  EXPECT_REFUSED(decode_array_action("cancel", R"({"brief": "yes"})"), "field 'brief' must be true or false, not string");
  EXPECT_REFUSED(decode_array_action("hold", R"({"brevity": true})"),
                 "unknown field 'brevity'; send {} or no body, or {\"brief\": true}");
}

TEST(DecodeSubmit, NamesTheFieldOfEachError) {
  EXPECT_TRUE(decode_submit(R"({"argv":["true"]})"));
  EXPECT_REFUSED(decode_submit(R"({"argv":["true"],"not_before":"2400-01-01T00:00:00Z"})"), "field 'not_before'");
  EXPECT_REFUSED(decode_submit(R"({"argv":["true"],"timeout_ms":1000000000000000})"), "field 'timeout_ms'");
  EXPECT_REFUSED(decode_submit(R"({"argv":["true"],"env":{"A=B":"x"}})"), "'A=B' contains '='");
  EXPECT_REFUSED(decode_submit("[1]"), "a job must be a JSON object");
}

TEST(DecodeSweepSubmit, AnArrayOrAGridAndTheRestAsOneJob) {
  auto none = decode_sweep_submit(R"({"argv":["x"],"cwd":"/tmp"})", 10'000);
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_FALSE(*none) << "a body with neither is a plain submit";

  auto array = decode_sweep_submit(R"({"argv":["x","{i}"],"cwd":"/tmp","name":"a","array":"0-9%3"})", 10'000);
  ASSERT_TRUE(array && *array) << (array ? "nullopt" : array.error().message);
  EXPECT_EQ((*array)->sweep.size(), 10u);
  EXPECT_EQ((*array)->sweep.max_running, 3);
  EXPECT_EQ((*array)->sweep_json, R"({"array":"0-9","max_running":3})");
  auto same = decode_sweep_submit(R"({"argv":["x"],"cwd":"/tmp","array":"0-9","max_running":3})", 10'000);
  ASSERT_TRUE(same && *same);
  EXPECT_EQ((*same)->sweep_json, (*array)->sweep_json) << "one array, however the cap is written";
  EXPECT_EQ((*array)->base.name, "a");
  EXPECT_EQ((*array)->base.argv, (std::vector<std::string>{"x", "{i}"}));

  auto grid = decode_sweep_submit(
      R"({"argv":["x"],"cwd":"/tmp","grid":["lr=1,2","seed=0..2"],"max_running":2})", 10'000);
  ASSERT_TRUE(grid && *grid);
  EXPECT_EQ((*grid)->sweep.size(), 6u);
  EXPECT_EQ((*grid)->sweep.max_running, 2);
  EXPECT_EQ((*grid)->sweep_json, R"({"grid":["lr=1,2","seed=0..2"],"max_running":2})");
}

TEST(DecodeSweepSubmit, EachRefusalNamesTheField) {
  struct Case { const char* body; const char* message; };
  for (Case c : {Case{R"({"argv":["x"],"array":"9-0"})", "field 'array': --array range '9-0' ends before it starts"},
                 Case{R"({"argv":["x"],"array":7})", "field 'array' must be a string"},
                 Case{R"({"argv":["x"],"array":"1","grid":["a=1"]})", "not both"},
                 Case{R"({"argv":["x"],"grid":[]})", "field 'grid' must be a list of 1 to 32"},
                 Case{R"({"argv":["x"],"grid":[3]})", "each parameter is a string"},
                 Case{R"({"argv":["x"],"grid":["a=1","a=2"]})", "field 'grid': --grid a is given twice"},
                 Case{R"({"argv":["x"],"array":"0-9%2","max_running":3})", "the array says %2 and 'max_running' 3"},
                 Case{R"({"argv":["x"],"array":"0-9","max_running":0})", "field 'max_running'"},
                 Case{R"({"argv":["x"],"array":"0-99"})", "the array has 100 elements, more than [sweeps] max_elements (50)"},
                 Case{R"({"argv":["x"],"array":"0-9","gpu":1})", "unknown field 'gpu'"}}) {
    auto decoded = decode_sweep_submit(c.body, 50);
    ASSERT_FALSE(decoded) << c.body;
    EXPECT_NE(decoded.error().message.find(c.message), std::string::npos)
        << c.body << " -> " << decoded.error().message;
  }
  std::string long_array = R"({"argv":["x"],"array":")" + std::string(5000, '1') + "\"}";
  auto clipped = decode_sweep_submit(long_array, 50);
  ASSERT_FALSE(clipped);
  EXPECT_LT(clipped.error().message.size(), 200u) << "no message quotes a long body";
}

TEST(DecodeMove, EachForm) {
  auto before = decode_move(R"({"before":"train"})");
  ASSERT_TRUE(before) << before.error().message;
  EXPECT_EQ(before->where, Where::kBefore);
  EXPECT_EQ(before->other, "train");
  auto after = decode_move(R"({"after":7})");
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(after->where, Where::kAfter);
  EXPECT_EQ(after->other, "7");
  EXPECT_EQ(decode_move(R"({"top":true})")->where, Where::kTop);
  EXPECT_EQ(decode_move(R"({"bottom":true})")->where, Where::kBottom);
  auto priority = decode_move(R"({"priority":"high"})");
  ASSERT_TRUE(priority);
  EXPECT_EQ(priority->where, Where::kPriority);
  EXPECT_EQ(priority->priority, 10);
  EXPECT_EQ(decode_move(R"({"priority":1000})")->priority, 1000);
}

TEST(DecodeMove, Refusals) {
  EXPECT_REFUSED(decode_move("not json"), "not valid JSON");
  EXPECT_REFUSED(decode_move("[]"), "move takes one of");
  EXPECT_REFUSED(decode_move("{}"), "move takes one of");
  EXPECT_REFUSED(decode_move(R"({"top":true,"bottom":true})"), "move takes one of");
  EXPECT_REFUSED(decode_move(R"({"before":[[1]]})"), "field 'before' must be a job id (1 or more) or name, not array");
  EXPECT_REFUSED(decode_move(R"({"after":{"a":1}})"), "field 'after' must be a job id (1 or more) or name, not object");
  EXPECT_REFUSED(decode_move(R"({"after":""})"), "field 'after' must be a job id (1 or more) or name, not an empty string");
  EXPECT_REFUSED(decode_move(R"({"before":0})"), "field 'before' must be a job id");
  EXPECT_REFUSED(decode_move(R"({"before":-3})"), "field 'before' must be a job id");
  EXPECT_REFUSED(decode_move(R"({"before":18446744073709551615})"), "field 'before' must be a job id");
  EXPECT_REFUSED(decode_move(R"({"before":1.5})"), "field 'before' must be a job id");
  EXPECT_REFUSED(decode_move(R"({"top":false})"), "field 'top' must be true");
  EXPECT_REFUSED(decode_move(R"({"bottom":1})"), "field 'bottom' must be true");
  EXPECT_REFUSED(decode_move(R"({"priority":1001})"), "field 'priority': bad priority '1001'");
  EXPECT_REFUSED(decode_move(R"({"priority":-1})"), "field 'priority': bad priority '-1'");
  EXPECT_REFUSED(decode_move(R"({"priority":"urgent"})"), "field 'priority': bad priority 'urgent'");
  EXPECT_REFUSED(decode_move(R"({"priority":[1]})"), "field 'priority' must be high, normal, low or an integer");
  EXPECT_REFUSED(decode_move(R"({"sideways":true})"), "unknown field 'sideways'");
  std::string long_key = "{\"" + std::string(10'000, 'k') + "\":1}";
  EXPECT_LT(refusal(decode_move(long_key)).size(), 300u);
}

TEST(DecodeRelease, OnlyAttentionTrue) {
  EXPECT_TRUE(decode_release(R"({"attention":true})"));
  EXPECT_REFUSED(decode_release(R"({"attention":"yes"})"), "field 'attention' must be true, not string");
  EXPECT_REFUSED(decode_release(R"({"attention":1})"), "field 'attention' must be true, not number");
  EXPECT_REFUSED(decode_release(R"({"attention":false})"), "field 'attention' is false");
  EXPECT_REFUSED(decode_release(R"({})"), "field 'attention' is missing");
  EXPECT_REFUSED(decode_release(""), "field 'attention' is missing");
  EXPECT_REFUSED(decode_release(R"({"attention":true,"force":true})"), "unknown field 'force'");
  EXPECT_REFUSED(decode_release(R"([true])"), "must be a JSON object");
  EXPECT_REFUSED(decode_release("{"), "not valid JSON");
}

TEST(DecodePlan, JobsReservationsAndReplace) {
  auto plan = decode_plan(R"({"jobs":[{"name":"a","argv":["true"]},{"name":"b","argv":["true"]}],
      "reservations":[{"name":"pair","gpus":[0,1],"jobs":["a"]},{"gpus":[2],"jobs":["b"]}],
      "replace":true})");
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->jobs.size(), 2u);
  EXPECT_TRUE(plan->replace);
  ASSERT_EQ(plan->reservations.size(), 2u);
  EXPECT_EQ(plan->reservations[0].name, "pair");
  EXPECT_EQ(plan->reservations[0].gpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(plan->reservations[1].name, "r1");
  EXPECT_EQ(plan->reservations[1].jobs, std::vector<std::string>{"b"});
}

TEST(DecodePlan, AJobWithArrayOrGridIsAJobArray) {
  auto plan = decode_plan(R"({"jobs":[{"name":"a","argv":["true"]},
      {"name":"s","argv":["x","{i}"],"array":"0-9%2"},
      {"name":"g","argv":["x"],"grid":["lr=1,2","seed=0..2"],"max_running":3}]})",
                          100);
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->jobs.size(), 3u);
  ASSERT_EQ(plan->sweeps.size(), 3u);
  EXPECT_FALSE(plan->sweeps[0]);
  ASSERT_TRUE(plan->sweeps[1] && plan->sweeps[2]);
  EXPECT_EQ(plan->jobs[1].name, "s");
  EXPECT_EQ(plan->sweeps[1]->sweep.size(), 10u);
  EXPECT_EQ(plan->sweeps[1]->sweep_json, R"({"array":"0-9","max_running":2})");
  EXPECT_EQ(plan->sweeps[2]->sweep.size(), 6u);
  EXPECT_EQ(plan->sweeps[2]->sweep.max_running, 3);
  EXPECT_REFUSED(
      decode_plan(R"({"jobs":[{"name":"s","argv":["x"],"array":"0-99"}]})", 50),
      "jobs[0]: field 'array': the array has 100 elements, more than [sweeps] max_elements (50)");
  EXPECT_REFUSED(
      decode_plan(
          R"({"jobs":[{"name":"s","argv":["x"],"source":"p.json:3","array":"0-1","grid":["a=1"]}]})"),
      "give \"array\" or \"grid\", not both");
}

TEST(DecodePlan, Refusals) {
  std::string job = R"({"name":"a","argv":["true"]})";
  EXPECT_REFUSED(decode_plan("[]"), "a plan must be a JSON object");
  EXPECT_REFUSED(decode_plan(R"({"jobs":[)" + job + R"(],"extra":1})"), "unknown field 'extra' in a plan");
  EXPECT_REFUSED(decode_plan(R"({})"), "non-empty 'jobs' list");
  EXPECT_REFUSED(decode_plan(R"({"jobs":[]})"), "non-empty 'jobs' list");
  EXPECT_REFUSED(decode_plan(R"({"jobs":{"a":1}})"), "non-empty 'jobs' list");
  EXPECT_REFUSED(decode_plan(R"({"jobs":[)" + job + R"(],"replace":"yes"})"), "field 'replace' must be true or false");
  EXPECT_REFUSED(decode_plan(R"({"jobs":[)" + job + R"(,{"argv":["x"],"gpus":-1}]})"), "jobs[1]: field 'gpus' is -1");
  EXPECT_REFUSED(decode_plan(R"({"jobs":[{"argv":["x"],"source":"p.json:4","retries":1001}]})"), "p.json:4: field 'retries'");
  EXPECT_REFUSED(decode_plan(R"({"jobs":[)" + job + R"(],"reservations":{}})"), "field 'reservations' must be a list");
  EXPECT_REFUSED(decode_plan(R"({"jobs":[)" + job + R"(],"reservations":[1]})"), "reservations[0] must be {");
  EXPECT_REFUSED(decode_plan(R"({"jobs":[)" + job + R"(],"reservations":[{"gpus":[0],"jobs":["a"],"size":2}]})"),
                 "unknown field 'reservations[0].size'");
  EXPECT_REFUSED(decode_plan(R"({"jobs":[)" + job + R"(],"reservations":[{"name":7,"gpus":[0],"jobs":["a"]}]})"),
                 "field 'reservations[0].name' must be a name");
  EXPECT_REFUSED(decode_plan(R"({"jobs":[)" + job + R"(],"reservations":[{"jobs":["a"]}]})"),
                 "field 'reservations[0].gpus' must be a list of GPU indices (0 to 1023)");
  EXPECT_REFUSED(decode_plan(R"({"jobs":[)" + job + R"(],"reservations":[{"gpus":[-1],"jobs":["a"]}]})"),
                 "field 'reservations[0].gpus'");
  EXPECT_REFUSED(decode_plan(R"({"jobs":[)" + job + R"(],"reservations":[{"gpus":[4294967296],"jobs":["a"]}]})"),
                 "field 'reservations[0].gpus'");
  EXPECT_REFUSED(decode_plan(R"({"jobs":[)" + job + R"(],"reservations":[{"gpus":["0"],"jobs":["a"]}]})"),
                 "field 'reservations[0].gpus'");
  EXPECT_REFUSED(decode_plan(R"({"jobs":[)" + job + R"(],"reservations":[{"gpus":[0],"jobs":[1]}]})"),
                 "field 'reservations[0].jobs' must be a list of job names");
  EXPECT_REFUSED(decode_plan(R"({"jobs":[)" + job + R"(],"reservations":[{"gpus":[0]}]})"),
                 "field 'reservations[0].jobs'");
}

TEST(DecodeQueries, NumbersAreCheckedNotDefaulted) {
  auto events = decode_events_query(parse_target("/v1/events?after=5&limit=20&wait_ms=100"));
  ASSERT_TRUE(events);
  EXPECT_EQ(events->after, 5);
  EXPECT_EQ(events->limit, 20);
  EXPECT_EQ(events->wait_ms, 100);
  auto defaults = decode_events_query(parse_target("/v1/events"));
  ASSERT_TRUE(defaults);
  EXPECT_EQ(defaults->after, 0);
  EXPECT_EQ(defaults->limit, limits::kDefaultEventsPerPage);
  EXPECT_EQ(defaults->wait_ms, 0);
  auto capped = decode_events_query(parse_target("/v1/events?limit=99999&wait_ms=9999999"));
  ASSERT_TRUE(capped);
  EXPECT_EQ(capped->limit, limits::kMaxEventsPerPage);
  EXPECT_EQ(capped->wait_ms, limits::kMaxEventWaitMs);
  EXPECT_REFUSED(decode_events_query(parse_target("/v1/events?after=abc")), "query parameter 'after' must be a whole number");
  EXPECT_REFUSED(decode_events_query(parse_target("/v1/events?after=")), "query parameter 'after'");
  EXPECT_REFUSED(decode_events_query(parse_target("/v1/events?after=-1")), "query parameter 'after'");
  EXPECT_REFUSED(decode_events_query(parse_target("/v1/events?after=99999999999999999999")), "query parameter 'after'");
  EXPECT_REFUSED(decode_events_query(parse_target("/v1/events?limit=10x")), "query parameter 'limit'");
  EXPECT_REFUSED(decode_events_query(parse_target("/v1/events?wait_ms=1.5")), "query parameter 'wait_ms'");

  auto log = decode_log_query(parse_target("/v1/jobs/7/log?run=2&offset=10&limit=99999999999"));
  ASSERT_TRUE(log);
  EXPECT_EQ(log->run, 2);
  EXPECT_EQ(log->offset, 10);
  EXPECT_EQ(log->limit, limits::kMaxLogChunk);
  EXPECT_EQ(decode_log_query(parse_target("/v1/jobs/7/log"))->run, std::nullopt);
  EXPECT_REFUSED(decode_log_query(parse_target("/v1/jobs/7/log?run=0")), "query parameter 'run' must be a whole number from 1");
  EXPECT_REFUSED(decode_log_query(parse_target("/v1/jobs/7/log?run=2147483648")), "query parameter 'run'");
  EXPECT_REFUSED(decode_log_query(parse_target("/v1/jobs/7/log?offset=-5")), "query parameter 'offset'");
  EXPECT_REFUSED(decode_log_query(parse_target("/v1/jobs/7/log?limit=lots")), "query parameter 'limit'");
}

// Found by fuzzing the query parameters: finished=18446744073709551615 was taken, and the
// store's LIMIT read it as a negative number (every finished job).
TEST(DecodeQueries, StatusFinishedAndThePendingPage) {
  EXPECT_EQ(decode_status_finished(parse_target("/v1/status")).value(), kStatusFinished);
  EXPECT_EQ(decode_status_finished(parse_target("/v1/status?finished=all")).value(), std::nullopt);
  EXPECT_EQ(decode_status_finished(parse_target("/v1/status?finished=2147483647")).value(), 2147483647u);
  for (const char* bad : {"/v1/status?finished=2147483648", "/v1/status?finished=18446744073709551615",
                          "/v1/status?finished=-1", "/v1/status?finished=x"}) {
    auto refused = decode_status_finished(parse_target(bad));
    ASSERT_FALSE(refused) << bad;
    EXPECT_NE(refused.error().message.find("from 0 to 2147483647, or all"), std::string::npos) << refused.error().message;
  }
  auto page = decode_pending_page(parse_target("/v1/status?pending_limit=100&pending_offset=7")).value();
  ASSERT_TRUE(page);
  EXPECT_EQ(page->limit, 100u);
  EXPECT_EQ(page->offset, 7u);
  EXPECT_EQ(decode_pending_page(parse_target("/v1/status")).value(), std::nullopt);
  EXPECT_FALSE(decode_pending_page(parse_target("/v1/status?pending_offset=7")));
  EXPECT_FALSE(decode_pending_page(parse_target("/v1/status?pending_limit=10001")));
  EXPECT_EQ(page->held_limit, std::nullopt);
  // held_limit: the held and blocked jobs listed, with the page only.
  page = decode_pending_page(parse_target("/v1/status?pending_limit=100&held_limit=0")).value();
  ASSERT_TRUE(page);
  EXPECT_EQ(page->held_limit, 0u);
  page = decode_pending_page(parse_target("/v1/status?pending_limit=1&held_limit=10000")).value();
  EXPECT_EQ(page->held_limit, 10000u);
  auto alone = decode_pending_page(parse_target("/v1/status?held_limit=7"));
  ASSERT_FALSE(alone);
  EXPECT_EQ(alone.error().message, "held_limit needs pending_limit (the page's size)");
  for (const char* bad : {"/v1/status?pending_limit=1&held_limit=10001", "/v1/status?pending_limit=1&held_limit=-1",
                          "/v1/status?pending_limit=1&held_limit="}) {
    auto refused = decode_pending_page(parse_target(bad));
    ASSERT_FALSE(refused) << bad;
    EXPECT_NE(refused.error().message.find("held_limit="), std::string::npos) << refused.error().message;
  }
}

TEST(DecodeQueries, StreamCursor) {
  Request request{http::verb::get, "/v1/events/stream?after=4", 11};
  Target target = parse_target("/v1/events/stream?after=4");
  EXPECT_EQ(decode_stream_cursor(request, target), 4);
  request.set("Last-Event-ID", "9");
  EXPECT_EQ(decode_stream_cursor(request, target), 9);  // the header wins
  request.set("Last-Event-ID", "");
  EXPECT_EQ(decode_stream_cursor(request, target), 4);  // empty: no id yet
  request.set("Last-Event-ID", "nine");
  EXPECT_REFUSED(decode_stream_cursor(request, target), "Last-Event-ID");
  EXPECT_REFUSED(decode_stream_cursor(Request{}, parse_target("/v1/events/stream?after=x")), "query parameter 'after'");
  EXPECT_EQ(decode_stream_cursor(Request{}, parse_target("/v1/events/stream")), 0);
}

// 2026-11-29T10:55:36.123Z: the decoders of the timeline and the report judge windows at it.
constexpr int64_t kNowMs = 1'795'949'736'123;
constexpr int64_t kHourMs = 3'600'000;
constexpr int64_t kDayMs = 24 * kHourMs;

Result<Window> timeline(std::string_view query) {
  return decode_timeline_query(parse_target("/v1/timeline?" + std::string(query)), kNowMs);
}

Result<ReportQuery> report(std::string_view query) {
  return decode_report_query(parse_target("/v1/report?" + std::string(query)), kNowMs);
}

TEST(DecodeTimelineQuery, TheWindowAndItsDefaults) {
  auto window = timeline("");
  ASSERT_TRUE(window) << window.error().message;
  EXPECT_EQ(window->from_ms, kNowMs - kDayMs);
  EXPECT_EQ(window->to_ms, kNowMs);
  window = timeline("to_ms=1000000000000");
  ASSERT_TRUE(window) << window.error().message;
  EXPECT_EQ(window->from_ms, 1'000'000'000'000 - kDayMs);
  EXPECT_EQ(window->to_ms, 1'000'000'000'000);
  window = timeline(fmt::format("from_ms={}&to_ms={}", kNowMs - kHourMs, kNowMs + 3 * kHourMs));
  ASSERT_TRUE(window) << window.error().message;  // the future: predicted runs
  EXPECT_EQ(window->from_ms, kNowMs - kHourMs);
  EXPECT_EQ(window->to_ms, kNowMs + 3 * kHourMs);
  // 90 days exactly, and at the ends of the range.
  EXPECT_TRUE(timeline(fmt::format("from_ms={}", kNowMs - limits::kMaxReportWindowMs)));
  EXPECT_TRUE(timeline("from_ms=0&to_ms=1"));
  EXPECT_TRUE(timeline(fmt::format("from_ms={}&to_ms={}", limits::kEndOfTimeMs - 1, limits::kEndOfTimeMs)));
  // The default start is a day before the end, but never before the epoch, which `from_ms`
  // cannot name either.
  window = timeline("to_ms=3600000");
  ASSERT_TRUE(window) << window.error().message;
  EXPECT_EQ(window->from_ms, 0);
  EXPECT_EQ(window->to_ms, 3'600'000);
}

TEST(DecodeTimelineQuery, RefusesWhatItCannotReadNamingTheParameterAndTheRange) {
  EXPECT_REFUSED(timeline("from_ms=yesterday"),
                 "query parameter 'from_ms' must be a whole number from 0 to 4102444800000, not 'yesterday'");
  EXPECT_REFUSED(timeline("from_ms="), "query parameter 'from_ms' must be a whole number from 0 to 4102444800000");
  EXPECT_REFUSED(timeline("from_ms=-1"), "query parameter 'from_ms' must be a whole number from 0 to 4102444800000");
  EXPECT_REFUSED(timeline("to_ms=1.5"), "query parameter 'to_ms' must be a whole number from 0 to 4102444800000");
  EXPECT_REFUSED(timeline("to_ms=99999999999999999999"), "query parameter 'to_ms'");
  EXPECT_REFUSED(timeline("to_ms=4102444800001"), "query parameter 'to_ms' must be a whole number from 0 to 4102444800000");
  EXPECT_REFUSED(timeline(fmt::format("from_ms={}&to_ms={}", kNowMs, kNowMs)), "from_ms must come before to_ms");
  EXPECT_REFUSED(timeline(fmt::format("from_ms={}", kNowMs + 1)), "from_ms must come before to_ms");
  EXPECT_REFUSED(timeline("to_ms=0"), "from_ms must come before to_ms");
  EXPECT_REFUSED(timeline(fmt::format("from_ms={}", kNowMs - limits::kMaxReportWindowMs - 1)),
                 "the window from from_ms to to_ms is longer than 90 days");
}

// Found by reading the handler: from_ms and to_ms were any int64, and `to_ms - from_ms` of
// -9e18 and 9e18 overflowed to a negative length, which passed the 90-day cap (and to_ms=-9e18
// alone made the default `to_ms - 1 day` overflow). Each end is now within 0..2100-01-01.
TEST(DecodeTimelineQuery, NoWindowArithmeticOverflows) {
  EXPECT_REFUSED(timeline("from_ms=-9000000000000000000&to_ms=9000000000000000000"), "query parameter 'to_ms'");
  EXPECT_REFUSED(timeline("from_ms=-9000000000000000000"), "query parameter 'from_ms'");
  EXPECT_REFUSED(timeline("to_ms=-9223372036854775808"), "query parameter 'to_ms'");
  EXPECT_REFUSED(timeline("from_ms=0&to_ms=9223372036854775807"), "query parameter 'to_ms'");
}

TEST(DecodeReportQuery, TheWindowAndItsDefaults) {
  auto query = report("");
  ASSERT_TRUE(query) << query.error().message;
  EXPECT_EQ(query->window.from_ms, kNowMs - 7 * kDayMs);
  EXPECT_EQ(query->window.to_ms, kNowMs);
  EXPECT_EQ(query->by, GroupBy::kUser);
  query = report("since=36h&until=2h&by=gpu");
  ASSERT_TRUE(query) << query.error().message;
  EXPECT_EQ(query->window.from_ms, kNowMs - 36 * kHourMs);
  EXPECT_EQ(query->window.to_ms, kNowMs - 2 * kHourMs);
  EXPECT_EQ(query->by, GroupBy::kGpu);
  // An RFC 3339 time; an `until` in the future is held at now.
  query = report("since=2026-11-29T00:00:00Z&until=2030-01-01T00:00:00Z&by=outcome");
  ASSERT_TRUE(query) << query.error().message;
  EXPECT_EQ(query->window.from_ms, kNowMs - (10 * kHourMs + 55 * 60'000 + 36'123));
  EXPECT_EQ(query->window.to_ms, kNowMs);
  EXPECT_EQ(query->by, GroupBy::kOutcome);
  EXPECT_TRUE(report("since=90d"));
}

TEST(DecodeReportQuery, RefusesWhatItCannotReadNamingTheParameter) {
  EXPECT_REFUSED(report("since=yesterday"),
                 "query parameter 'since' must be a duration back from now (7d, 36h; at most 36500d) or an "
                 "RFC 3339 time (2026-11-01T00:00:00Z), not 'yesterday'");
  EXPECT_REFUSED(report("until="), "query parameter 'until' must be a duration back from now");
  EXPECT_REFUSED(report("since=36501d"), "query parameter 'since' must be a duration back from now (7d, 36h; at most 36500d)");
  EXPECT_REFUSED(report("since=99999999999999999999"), "query parameter 'since'");
  EXPECT_REFUSED(report("since=91d"), "the window from since to until is longer than 90 days");
  EXPECT_REFUSED(report("since=0000-01-01T00:00:00Z"), "the window from since to until is longer than 90 days");
  EXPECT_REFUSED(report("since=1h&until=2h"), "since must come before until");
  EXPECT_REFUSED(report("since=2030-01-01T00:00:00Z"), "since must come before until");  // until is now
  EXPECT_REFUSED(report("by=team"), "query parameter 'by' must be user, name, outcome or gpu, not 'team'");
}

TEST(ParseJobRef, IdsAndNames) {
  EXPECT_EQ(parse_job_ref("7")->id, 7);
  EXPECT_EQ(parse_job_ref("train-a15")->name, "train-a15");
  EXPECT_EQ(parse_job_ref("-5")->name, "-5");  // a valid name, not the id -5
  EXPECT_REFUSED(parse_job_ref("0"), "a job id must be a whole number from 1");
  EXPECT_REFUSED(parse_job_ref("99999999999999999999"), "a job id");
  EXPECT_REFUSED(parse_job_ref(""), "empty");
}

std::string post(std::string_view path, std::string_view body) {
  return fmt::format("POST {} HTTP/1.1\r\nHost: gpuq\r\nContent-Length: {}\r\n\r\n{}", path,
                     body.size(), body);
}

TEST(AnswerStatusFor, RawRequestsAreJudgedAsTheServerJudgesThem) {
  EXPECT_EQ(answer_status_for("GET /v1/health HTTP/1.1\r\nHost: gpuq\r\n\r\n"), 200);
  EXPECT_EQ(answer_status_for("GET /v1/nothing HTTP/1.1\r\n\r\n"), 404);
  EXPECT_EQ(answer_status_for("GET /v1/events?after=x HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(answer_status_for("GET /v1/jobs/0 HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(answer_status_for(post("/v1/jobs/1/move", "{\"before\":" + nested(300'000) + "}")), 400);
  EXPECT_EQ(answer_status_for(post("/v1/jobs/1/move", R"({"top":true})")), 200);
  EXPECT_EQ(answer_status_for(post("/v1/gpus/gpu0/release", R"({"attention":"yes"})")), 400);
  EXPECT_EQ(answer_status_for(post("/v1/jobs", R"({"argv":["x"],"not_before":"2400-01-01T00:00:00Z"})")), 400);
  EXPECT_EQ(answer_status_for(post("/v1/plans", R"({"jobs":[]})")), 400);
  // The parser's limits: a header over 16 KiB, a body over 8 MiB (known from its length).
  std::string big_header = "GET /v1/health HTTP/1.1\r\nX-Big: " + std::string(limits::kMaxHeaderBytes, 'a') + "\r\n\r\n";
  EXPECT_EQ(answer_status_for(big_header), 431);
  EXPECT_EQ(answer_status_for(fmt::format("POST /v1/jobs HTTP/1.1\r\nContent-Length: {}\r\n\r\n{{",
                                          limits::kMaxBodyBytes + 1)),
            413);
  EXPECT_EQ(answer_status_for("NOT HTTP\r\n\r\n"), 400);
  EXPECT_EQ(answer_status_for("GET /v1/health HTTP/1.1\r\nContent-Length: x\r\n\r\n"), 400);
  // Incomplete: the server would wait for the rest.
  EXPECT_EQ(answer_status_for(""), 0);
  EXPECT_EQ(answer_status_for("GET /v1/hea"), 0);
  EXPECT_EQ(answer_status_for("POST /v1/jobs HTTP/1.1\r\nContent-Length: 10\r\n\r\n{\"a\""), 0);
  // Judged at the head, as the server does, before a byte of the body arrives: a framing two
  // readers could read differently, another API version.
  EXPECT_EQ(answer_status_for("POST /v1/gc HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"), 400);
  EXPECT_EQ(answer_status_for("POST /v1/gc HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n2\r\n{}"), 400);
  EXPECT_EQ(answer_status_for("POST /v1/gc HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{"), 400);
  EXPECT_EQ(answer_status_for("POST /v1/gc HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{"), 0);
  EXPECT_EQ(answer_status_for("POST /v1/gc HTTP/1.1\r\nGpuq-Api: 999\r\nContent-Length: 5\r\n\r\n"), 400);
}

std::string get(std::string_view target) { return fmt::format("GET {} HTTP/1.1\r\nHost: gpuq\r\n\r\n", target); }

// The timeline's and the report's queries are judged as their handlers judge them (with the
// same decoders); before, answer_status_for passed both unchecked.
TEST(AnswerStatusFor, TimelineAndReportQueries) {
  EXPECT_EQ(answer_status_for(get("/v1/timeline?from_ms=-9000000000000000000&to_ms=9000000000000000000")), 400);
  EXPECT_EQ(answer_status_for(get("/v1/timeline?from_ms=x")), 400);
  EXPECT_EQ(answer_status_for(get("/v1/timeline?from_ms=1000&to_ms=1000")), 400);
  EXPECT_EQ(answer_status_for(get("/v1/report?by=team")), 400);
  EXPECT_EQ(answer_status_for(get("/v1/report?since=yesterday")), 400);
  EXPECT_EQ(answer_status_for(get("/v1/report?since=2000d")), 400);
  EXPECT_EQ(answer_status_for(get("/v1/timeline"), kNowMs), 200);
  EXPECT_EQ(answer_status_for(get(fmt::format("/v1/timeline?from_ms={}&to_ms={}", kNowMs - kHourMs, kNowMs + kHourMs)),
                              kNowMs),
            200);
  EXPECT_EQ(answer_status_for(get(fmt::format("/v1/timeline?from_ms={}", kNowMs + kHourMs)), kNowMs), 400);
  EXPECT_EQ(answer_status_for(get("/v1/report?since=30d&until=1d&by=name"), kNowMs), 200);
  EXPECT_EQ(answer_status_for(get("/v1/report?since=2026-11-29T11:00:00Z"), kNowMs), 400);  // after now
  EXPECT_EQ(answer_status_for(get("/v1/report?since=2026-11-29T10:00:00Z"), kNowMs), 200);
}

}  // namespace
}  // namespace gpuq::api
