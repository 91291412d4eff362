// SPDX-License-Identifier: Apache-2.0
#include "api/http.h"

#include <fmt/format.h>

#include <cstdio>
#include <stdexcept>

#include "base/api_version.h"
#include "model/limits.h"

namespace gpuq::api {
namespace {

http::status status_for(Code code) {
  switch (code) {
    case Code::kInvalidArgument: return http::status::bad_request;
    case Code::kNotFound: return http::status::not_found;
    case Code::kConflict:
    case Code::kFailedPrecondition: return http::status::conflict;
    case Code::kUnavailable: return http::status::service_unavailable;
    case Code::kUnauthenticated: return http::status::unauthorized;
    case Code::kPermissionDenied: return http::status::forbidden;
    case Code::kResourceExhausted: return http::status::too_many_requests;
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

Response json_response_with_list(http::status status, const nlohmann::json& head,
                                 std::string_view list_key, size_t count,
                                 const std::function<nlohmann::json(size_t)>& item) {
  auto dump = [](const nlohmann::json& value) {
    return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  for (const auto& [key, value] : head.items()) {
    if (key >= list_key) throw std::logic_error(fmt::format("json_response_with_list: key {} of the head "
                                                            "sorts after the list's {}", key, list_key));
  }
  Response res{status, 11};
  res.set(http::field::content_type, "application/json");
  std::string& body = res.body();
  body = dump(head);
  body.pop_back();  // the head's closing brace: the list comes last
  if (!head.empty()) body += ',';
  body += dump(nlohmann::json(list_key));
  body += ":[";
  for (size_t k = 0; k < count; ++k) {
    if (k > 0) body += ',';
    body += dump(item(k));
  }
  body += "]}\n";
  return res;
}

Response error_response(const Error& error) { return error_response(error, status_for(error.code)); }

Response error_response(const Error& error, http::status status) {
  return json_response(status, {{"error", {{"code", code_name(error.code)}, {"message", error.message}}}});
}

Response text_response(http::status status, std::string body) {
  Response res{status, 11};
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.body() = std::move(body);
  return res;
}

std::optional<Response> refuse_ambiguous_framing(const Request& head) {
  size_t encodings = head.count(http::field::transfer_encoding);
  if (encodings == 0) return std::nullopt;
  auto it = head.find(http::field::transfer_encoding);
  std::string_view value(it->value().data(), it->value().size());
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  bool chunked = value.size() == 7 && boost::beast::iequals(boost::beast::string_view(value.data(), value.size()), "chunked");
  if (encodings == 1 && chunked && head.version() >= 11) return std::nullopt;
  return error_response({Code::kInvalidArgument,
                         "the request's Transfer-Encoding is refused: the daemon reads a body "
                         "framed by one Content-Length, or by Transfer-Encoding: chunked alone "
                         "(HTTP/1.1), so that no two readers can split the bytes into different "
                         "requests"});
}

std::string Target::param(std::string_view key, std::string fallback) const {
  for (const auto& [k, v] : query) {
    if (k == key) return v;
  }
  return fallback;
}

const std::string* Target::find(std::string_view key) const {
  for (const auto& [k, v] : query) {
    if (k == key) return &v;
  }
  return nullptr;
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

void limit_parser(RequestParser& parser) {
  parser.header_limit(static_cast<std::uint32_t>(limits::kMaxHeaderBytes));
  parser.body_limit(limits::kMaxBodyBytes);
}

std::optional<Response> parse_error_response(const boost::system::error_code& ec) {
  const auto& http_errors = http::make_error_code(http::error::end_of_stream).category();
  // Not the parser's complaint (a reset, a cancel by the idle deadline) or the end of the
  // stream, whole or in the middle of a request: the client left or is being dropped.
  if (ec.category() != http_errors || ec == http::error::end_of_stream ||
      ec == http::error::partial_message) {
    return std::nullopt;
  }
  if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
    return error_response(
        {Code::kInvalidArgument,
         fmt::format("the request's header is larger than {} KiB, the most the daemon reads "
                     "(docs/api.md, \"Limits\"): send fewer or shorter header fields",
                     limits::kMaxHeaderBytes >> 10)},
        http::status::request_header_fields_too_large);
  }
  if (ec == http::error::body_limit) {
    return error_response(
        {Code::kInvalidArgument,
         fmt::format("the request body is larger than {} MiB, the most the daemon reads "
                     "(docs/api.md, \"Limits\"); a job's script may be at most 1 MiB: send less",
                     limits::kMaxBodyBytes >> 20)},
        http::status::payload_too_large);
  }
  return error_response({Code::kInvalidArgument,
                         fmt::format("the request is not valid HTTP/1.1: {}", ec.message())});
}

std::optional<Response> refuse_other_api_version(const Request& request) {
  auto field = request.find(kApiVersionHeader);
  if (field == request.end()) return std::nullopt;
  std::string_view text(field->value().data(), field->value().size());
  auto version = parse_api_version(text);
  if (version == kApiVersion) return std::nullopt;
  std::string message =
      version ? fmt::format(
                    "this gpuq daemon speaks API {} and the client speaks API {}: "
                    "use the gpuq that matches the daemon (`gpuq --version` prints its "
                    "API), or restart the daemon with the client's gpuq",
                    kApiVersion, *version)
              : fmt::format(
                    "the request's {} header '{}' is not an API version: send a whole "
                    "number (this daemon speaks API {}), or no header",
                    kApiVersionHeader, text.substr(0, 40), kApiVersion);
  return json_response(http::status::bad_request,
                       {{"error", {{"code", "api_version"}, {"message", message}}}});
}

void add_api_version(http::fields& fields) {
  fields.set(kApiVersionHeader, std::to_string(kApiVersion));
}

Route route(http::verb method, std::string_view target) {
  Route r;
  r.target = parse_target(target);
  const auto& s = r.target.segments;
  bool get = method == http::verb::get;
  bool post = method == http::verb::post;
  auto to = [&r](Endpoint endpoint, std::string subject = "", std::string verb = "") {
    r.endpoint = endpoint;
    r.subject = std::move(subject);
    r.verb = std::move(verb);
    return std::move(r);
  };
  if (s.size() == 1 && s[0] == "metrics" && get) return to(Endpoint::kMetrics);  // where Prometheus looks
  if (s.empty() || s[0] != "v1") return r;
  if (s.size() == 2 && get) {
    if (s[1] == "health") return to(Endpoint::kHealth);
    if (s[1] == "status") return to(Endpoint::kStatus);
    if (s[1] == "gpus") return to(Endpoint::kGpus);
    if (s[1] == "hooks") return to(Endpoint::kHooks);
    if (s[1] == "events") return to(Endpoint::kEvents);
    if (s[1] == "fleet") return to(Endpoint::kFleet);
    if (s[1] == "timeline") return to(Endpoint::kTimeline);
    if (s[1] == "report") return to(Endpoint::kReport);
    if (s[1] == "me") return to(Endpoint::kMe);
  }
  if (s.size() == 2 && post) {
    if (s[1] == "jobs") return to(Endpoint::kSubmit);
    if (s[1] == "plans") return to(Endpoint::kPlan);
    if (s[1] == "drain" || s[1] == "undrain") return to(Endpoint::kDrain, "", s[1]);
    if (s[1] == "gc") return to(Endpoint::kGc);
  }
  if (s.size() == 3 && s[1] == "events" && s[2] == "stream" && get) return to(Endpoint::kEventStream);
  if (s.size() == 3 && s[1] == "dashboard" && s[2] == "session" && post) return to(Endpoint::kDashboardSession, "", "open");
  if (s.size() == 4 && s[1] == "dashboard" && s[2] == "session" && s[3] == "revoke" && post) {
    return to(Endpoint::kDashboardSession, "", "revoke");
  }
  if (s.size() == 3 && s[1] == "jobs" && get) return to(Endpoint::kShow, s[2]);
  if (s.size() == 3 && s[1] == "arrays" && get) return to(Endpoint::kArray, s[2]);
  if (s.size() == 4 && s[1] == "arrays" && post &&
      (s[3] == "move" || s[3] == "cancel" || s[3] == "hold" || s[3] == "release" || s[3] == "retry")) {
    return to(Endpoint::kArrayControl, s[2], s[3]);
  }
  if (s.size() == 4 && s[1] == "gpus" && s[3] == "release" && post) return to(Endpoint::kReleaseGpu, s[2]);
  if (s.size() == 4 && s[1] == "jobs" && s[3] == "log" && get) return to(Endpoint::kLog, s[2]);
  if (s.size() == 4 && s[1] == "jobs" && s[3] == "cancel" && post) return to(Endpoint::kCancel, s[2]);
  if (s.size() == 4 && s[1] == "jobs" && post &&
      (s[3] == "hold" || s[3] == "release" || s[3] == "retry" || s[3] == "move")) {
    return to(Endpoint::kControl, s[2], s[3]);
  }
  return r;
}

boost::asio::awaitable<Response> answer_or_internal_error(boost::asio::awaitable<Response> answer,
                                                         std::string what) {
  std::string why;
  try {
    co_return co_await std::move(answer);
  } catch (const std::exception& e) {
    why = e.what();
  } catch (...) {
    why = "an exception that is not a std::exception";
  }
  if (what.size() > 200) what = what.substr(0, 200) + "...";
  std::fprintf(stderr, "gpuq daemon: internal error answering %s: %s\n", what.c_str(), why.c_str());
  co_return error_response({Code::kInternal,
                            fmt::format("the daemon failed to answer {}: {}; this is a bug, please "
                                        "report it with the daemon's log",
                                        what, why)});
}

}  // namespace gpuq::api
