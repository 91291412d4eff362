// The HTTP vocabulary of the api module: Beast request and response types and the helpers
// that turn JSON values and gpuq Errors into responses (docs/api.md, "Errors").
// Include this, not Beast directly, so Beast stays inside the api module's few files.
// Pure helpers; thread-safe.
#pragma once

#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/asio.h"
#include "base/status.h"

namespace gpuq::api {

namespace http = boost::beast::http;
using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

Response json_response(http::status status, const nlohmann::json& body);
// {"error":{"code","message"}} with the HTTP status that fits the code.
Response error_response(const Error& error);
Response text_response(http::status status, std::string body);

// A request target split into path segments and query parameters (percent-decoded).
struct Target {
  std::vector<std::string> segments;  // "/v1/jobs/7/log" -> {"v1","jobs","7","log"}
  std::vector<std::pair<std::string, std::string>> query;
  // The parameter's value, or `fallback` when absent.
  std::string param(std::string_view key, std::string fallback = "") const;
};
Target parse_target(std::string_view target);

}  // namespace gpuq::api
