#include "api/http.h"

namespace gpuq::api {
namespace {

http::status status_for(Code code) {
  switch (code) {
    case Code::kInvalidArgument: return http::status::bad_request;
    case Code::kNotFound: return http::status::not_found;
    case Code::kConflict:
    case Code::kFailedPrecondition: return http::status::conflict;
    case Code::kUnavailable: return http::status::service_unavailable;
    default: return http::status::internal_server_error;
  }
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() &&
        hex_value(text[i + 1]) >= 0 && hex_value(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2]));
      i += 2;
    } else if (text[i] == '+') {
      out += ' ';
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

Response json_response(http::status status, const nlohmann::json& body) {
  Response res{status, 11};
  res.set(http::field::content_type, "application/json");
  res.body() = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  res.body() += '\n';
  return res;
}

Response error_response(const Error& error) {
  return json_response(status_for(error.code),
                       {{"error", {{"code", code_name(error.code)}, {"message", error.message}}}});
}

Response text_response(http::status status, std::string body) {
  Response res{status, 11};
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.body() = std::move(body);
  return res;
}

std::string Target::param(std::string_view key, std::string fallback) const {
  for (const auto& [k, v] : query) {
    if (k == key) return v;
  }
  return fallback;
}

Target parse_target(std::string_view target) {
  Target out;
  std::string_view path = target.substr(0, target.find('?'));
  std::string_view query =
      target.find('?') == std::string_view::npos ? "" : target.substr(target.find('?') + 1);
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    std::string_view part = path.substr(start, slash == std::string_view::npos ? path.npos : slash - start);
    if (!part.empty()) out.segments.push_back(percent_decode(part));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  start = 0;
  while (start < query.size()) {
    size_t amp = query.find('&', start);
    std::string_view pair = query.substr(start, amp == std::string_view::npos ? query.npos : amp - start);
    size_t eq = pair.find('=');
    if (!pair.empty()) {
      out.query.emplace_back(percent_decode(pair.substr(0, eq)),
                             eq == std::string_view::npos ? "" : percent_decode(pair.substr(eq + 1)));
    }
    if (amp == std::string_view::npos) break;
    start = amp + 1;
  }
  return out;
}

}  // namespace gpuq::api
