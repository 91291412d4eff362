// SPDX-License-Identifier: Apache-2.0
// The HTTP vocabulary of the api module: Beast request and response types, the helpers that
// turn JSON values and gpuq Errors into responses (docs/api.md, "Errors"), the parser limits
// and the answers to requests that break them (docs/api.md, "Limits"), and the routing of a
// request to its endpoint. The server and answer_status_for() (request_check.h) share these,
// so a request is judged the same way with or without a daemon.
// Include this, not Beast directly, so Beast stays inside the api module's few files.
// Pure helpers; thread-safe.
#pragma once

#include <boost/beast/http.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "base/asio.h"
#include "base/status.h"

namespace gpuq::api {

namespace http = boost::beast::http;
using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;
using RequestParser = http::request_parser<http::string_body>;

Response json_response(http::status status, const nlohmann::json& body);
// json_response() of `head` with one more member, `list_key`: an array of `count` items, each
// made by `item(k)` and written as it is made, so that no tree of every item is held at once
// (an array's submit answers with a million elements). The same text as the whole tree's:
// `list_key` must sort after every key of `head` (nlohmann orders an object's keys).
Response json_response_with_list(http::status status, const nlohmann::json& head,
                                 std::string_view list_key, size_t count,
                                 const std::function<nlohmann::json(size_t)>& item);
// {"error":{"code","message"}} with the HTTP status that fits the code.
Response error_response(const Error& error);
// The same body with a status more precise than the code's own (413, 431).
Response error_response(const Error& error, http::status status);
Response text_response(http::status status, std::string body);

// A request target split into path segments and query parameters (percent-decoded).
struct Target {
  std::vector<std::string> segments;  // "/v1/jobs/7/log" -> {"v1","jobs","7","log"}
  std::vector<std::pair<std::string, std::string>> query;
  // The parameter's value, or `fallback` when absent.
  std::string param(std::string_view key, std::string fallback = "") const;
  // The parameter's value (possibly empty), or null when absent.
  const std::string* find(std::string_view key) const;
};
Target parse_target(std::string_view target);

// Sets the limits of limits.h (header and body size) on a parser of a request.
void limit_parser(RequestParser& parser);

// The answer to a request the parser refused: 431 (header over the limit), 413 (body over the
// limit) or 400 (not HTTP/1.x), each with a JSON error; the connection is then closed. Null
// when `ec` says the client left (end of stream, reset, cancelled): there is no one to answer.
std::optional<Response> parse_error_response(const boost::system::error_code& ec);

// The answer to a request head whose body's framing two readers could read differently
// (request smuggling): a Transfer-Encoding other than exactly `chunked` on HTTP/1.1 (Beast
// itself refuses Content-Length beside Transfer-Encoding, and Content-Lengths that differ).
// 400 `invalid_argument`; the connection is then closed. Null when the framing is plain.
std::optional<Response> refuse_ambiguous_framing(const Request& head);

// The answer to a request that says it speaks another API version (a `Gpuq-Api` header other
// than kApiVersion, base/api_version.h): 400 with code "api_version", naming both versions and
// what to do. Null for this version or no header (curl, the dashboard). Every answer the daemon
// sends carries its own version (add_api_version).
std::optional<Response> refuse_other_api_version(const Request& request);
void add_api_version(http::fields& fields);

// Where a request goes (docs/api.md, "Endpoints").
enum class Endpoint {
  kNone,  // no such endpoint: 404
  kMetrics, kHealth, kStatus, kGpus, kHooks, kReleaseGpu, kEvents, kEventStream, kSubmit, kShow,
  kCancel, kControl, kPlan, kDrain, kLog, kGc, kFleet, kTimeline, kReport, kArray, kArrayControl,
  kDashboardSession,  // POST /v1/dashboard/session[/revoke]: a system daemon's user's token
  kMe,                // GET /v1/me: who the caller is and whether it is an admin
};
struct Route {
  Endpoint endpoint = Endpoint::kNone;
  std::string subject;  // the job reference or GPU named in the path
  std::string verb;     // kControl: hold, release, retry or move; kDrain: drain or undrain
  Target target;
};
Route route(http::verb method, std::string_view target);

// Awaits `answer`; should it throw, which no handler means to, answers 500 `internal` instead
// and logs the exception to stderr with `what` (the request line), so that one bad request
// can neither end its connection unanswered nor the daemon.
boost::asio::awaitable<Response> answer_or_internal_error(boost::asio::awaitable<Response> answer,
                                                         std::string what);

}  // namespace gpuq::api
