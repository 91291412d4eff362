// SPDX-License-Identifier: Apache-2.0
#include "api/http.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>

#include "api/server.h"

namespace gpuq::api {
namespace {

TEST(ParseTarget, SegmentsAndDecodedQuery) {
  Target t = parse_target("/v1/jobs/eval%2Da15/log?run=2&offset=10&name=a+b");
  EXPECT_EQ(t.segments, (std::vector<std::string>{"v1", "jobs", "eval-a15", "log"}));
  EXPECT_EQ(t.param("run"), "2");
  EXPECT_EQ(t.param("offset"), "10");
  EXPECT_EQ(t.param("name"), "a b");
  EXPECT_EQ(t.param("missing", "x"), "x");
}

TEST(ErrorResponse, CarriesAStableCodeAndStatus) {
  Response r = error_response({Code::kInvalidArgument, "bad"});
  EXPECT_EQ(r.result(), http::status::bad_request);
  auto body = nlohmann::json::parse(r.body());
  EXPECT_EQ(body["error"]["code"], "invalid_argument");
  EXPECT_EQ(body["error"]["message"], "bad");
  EXPECT_EQ(error_response({Code::kNotFound, ""}).result(), http::status::not_found);
  EXPECT_EQ(error_response({Code::kConflict, ""}).result(), http::status::conflict);
}

// Written item by item, the answer is the same text as the whole tree's.
TEST(JsonResponseWithList, IsTheTextOfTheWholeTree) {
  std::vector<std::string> names = {"a[0]", "a[1]", "quote\"d", "\xff bad utf-8"};
  nlohmann::json head = {{"array", {{"id", 3}, {"name", "a"}}}};
  auto item = [&names](size_t k) -> nlohmann::json { return {{"id", k + 10}, {"name", names[k]}}; };
  nlohmann::json whole = head;
  whole["jobs"] = nlohmann::json::array();
  for (size_t k = 0; k < names.size(); ++k) whole["jobs"].push_back(item(k));
  EXPECT_EQ(json_response_with_list(http::status::created, head, "jobs", names.size(), item).body(),
            json_response(http::status::created, whole).body());
  whole["jobs"] = nlohmann::json::array();
  EXPECT_EQ(json_response_with_list(http::status::ok, head, "jobs", 0, item).body(),
            json_response(http::status::ok, whole).body());
  EXPECT_EQ(json_response_with_list(http::status::ok, nlohmann::json::object(), "jobs", 1, item).body(),
            json_response(http::status::ok, {{"jobs", {item(0)}}}).body());
  // A head key that sorts after the list would be out of order: refused, not written wrong.
  EXPECT_THROW(json_response_with_list(http::status::ok, {{"zeta", 1}}, "jobs", 0, item), std::logic_error);
}

TEST(ParseErrorResponse, LimitsAnswerWithJsonErrors) {
  auto header = parse_error_response(http::make_error_code(http::error::header_limit));
  ASSERT_TRUE(header);
  EXPECT_EQ(header->result(), http::status::request_header_fields_too_large);
  auto body = nlohmann::json::parse(header->body());
  EXPECT_EQ(body["error"]["code"], "invalid_argument");
  EXPECT_NE(body["error"]["message"].get<std::string>().find("header is larger than 16 KiB"), std::string::npos);

  auto large = parse_error_response(http::make_error_code(http::error::body_limit));
  ASSERT_TRUE(large);
  EXPECT_EQ(large->result(), http::status::payload_too_large);
  EXPECT_NE(nlohmann::json::parse(large->body())["error"]["message"].get<std::string>().find("larger than 8 MiB"),
            std::string::npos);

  auto malformed = parse_error_response(http::make_error_code(http::error::bad_method));
  ASSERT_TRUE(malformed);
  EXPECT_EQ(malformed->result(), http::status::bad_request);

  // The client left or was dropped: no one to answer.
  EXPECT_FALSE(parse_error_response(http::make_error_code(http::error::end_of_stream)));
  EXPECT_FALSE(parse_error_response(http::make_error_code(http::error::partial_message)));
  EXPECT_FALSE(parse_error_response(boost::asio::error::operation_aborted));
  EXPECT_FALSE(parse_error_response(boost::asio::error::connection_reset));
}

TEST(Route, PathsAndMethods) {
  EXPECT_EQ(route(http::verb::get, "/metrics").endpoint, Endpoint::kMetrics);
  EXPECT_EQ(route(http::verb::get, "/v1/events/stream?after=3").endpoint, Endpoint::kEventStream);
  Route move = route(http::verb::post, "/v1/jobs/train/move");
  EXPECT_EQ(move.endpoint, Endpoint::kControl);
  EXPECT_EQ(move.subject, "train");
  EXPECT_EQ(move.verb, "move");
  Route array_move = route(http::verb::post, "/v1/arrays/shards/move");
  EXPECT_EQ(array_move.endpoint, Endpoint::kArrayControl);
  EXPECT_EQ(array_move.subject, "shards");
  EXPECT_EQ(route(http::verb::get, "/v1/arrays/shards/move").endpoint, Endpoint::kNone);  // POST only
  for (const char* verb : {"cancel", "hold", "release", "retry"}) {
    Route action = route(http::verb::post, fmt::format("/v1/arrays/shards/{}", verb));
    EXPECT_EQ(action.endpoint, Endpoint::kArrayControl) << verb;
    EXPECT_EQ(action.verb, verb);
  }
  EXPECT_EQ(route(http::verb::post, "/v1/arrays/shards/start").endpoint, Endpoint::kNone);
  Route release = route(http::verb::post, "/v1/gpus/gpu1/release");
  EXPECT_EQ(release.endpoint, Endpoint::kReleaseGpu);
  EXPECT_EQ(release.subject, "gpu1");
  EXPECT_EQ(route(http::verb::post, "/v1/undrain").verb, "undrain");
  EXPECT_EQ(route(http::verb::get, "/v1/jobs/7/log?run=1").target.param("run"), "1");
  EXPECT_EQ(route(http::verb::get, "/v1/jobs").endpoint, Endpoint::kNone);  // POST only
  EXPECT_EQ(route(http::verb::delete_, "/v1/jobs/7").endpoint, Endpoint::kNone);
  EXPECT_EQ(route(http::verb::get, "/v2/status").endpoint, Endpoint::kNone);
}

boost::asio::awaitable<Response> throws_logic_error() {
  throw std::logic_error("a handler's bug");
  co_return Response{};
}

boost::asio::awaitable<Response> answers_ok() { co_return text_response(http::status::ok, "fine"); }

Response run_answer(boost::asio::awaitable<Response> (*handler)()) {
  boost::asio::io_context ioc;
  Response out;
  boost::asio::co_spawn(ioc, answer_or_internal_error(handler(), "POST /v1/jobs"),
                        [&out](std::exception_ptr error, Response response) {
                          EXPECT_FALSE(error) << "an exception escaped the backstop";
                          out = std::move(response);
                        });
  ioc.run();
  return out;
}

TEST(AnswerOrInternalError, AThrowingHandlerAnswers500AndLogs) {
  ::testing::internal::CaptureStderr();
  Response response = run_answer(throws_logic_error);
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(response.result(), http::status::internal_server_error);
  auto body = nlohmann::json::parse(response.body());
  EXPECT_EQ(body["error"]["code"], "internal");
  EXPECT_NE(body["error"]["message"].get<std::string>().find("a handler's bug"), std::string::npos);
  EXPECT_NE(log.find("internal error answering POST /v1/jobs: a handler's bug"), std::string::npos) << log;

  EXPECT_EQ(run_answer(answers_ok).body(), "fine");
}

TEST(PeerIsTrusted, OwnUserYesUnreadableCredentialsNo) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  EXPECT_TRUE(peer_is_trusted(pair[0]));
  ::close(pair[0]);
  ::close(pair[1]);
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  EXPECT_FALSE(peer_is_trusted(pipe_fds[0]));  // getsockopt fails: not a socket
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  EXPECT_FALSE(peer_is_trusted(-1));
}

}  // namespace
}  // namespace gpuq::api

namespace gpuq::api {
namespace {

Request with_encoding(std::string value, unsigned version = 11) {
  Request r{http::verb::post, "/v1/gc", version};
  r.set(http::field::transfer_encoding, value);
  return r;
}

TEST(RefuseAmbiguousFraming, OnlyChunkedAloneOnHttp11) {
  EXPECT_FALSE(refuse_ambiguous_framing(Request{http::verb::post, "/v1/gc", 11}));
  EXPECT_FALSE(refuse_ambiguous_framing(with_encoding("chunked")));
  EXPECT_FALSE(refuse_ambiguous_framing(with_encoding("Chunked ")));
  for (std::string coding : {"chunked, gzip", "gzip, chunked", "gzip", "identity", "", "chunked;q=1"}) {
    auto refused = refuse_ambiguous_framing(with_encoding(coding));
    ASSERT_TRUE(refused) << coding;
    EXPECT_EQ(refused->result(), http::status::bad_request);
    EXPECT_NE(refused->body().find("Transfer-Encoding"), std::string::npos);
  }
  EXPECT_TRUE(refuse_ambiguous_framing(with_encoding("chunked", 10))) << "HTTP/1.0 has no chunks";
  Request twice = with_encoding("chunked");
  twice.insert(http::field::transfer_encoding, "chunked");
  EXPECT_TRUE(refuse_ambiguous_framing(twice));
}

}  // namespace
}  // namespace gpuq::api
