#include "api/http.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gpuq::api
