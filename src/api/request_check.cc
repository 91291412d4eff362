// SPDX-License-Identifier: Apache-2.0
#include "api/request_check.h"

#include <boost/beast/core.hpp>

#include "api/bodies.h"
#include "base/time.h"
#include "model/spec_json.h"

namespace gpuq::api {

Status check_request(const Route& route, const Request& request, int64_t now_ms) {
  std::string_view body = request.body();
  auto status = [](const auto& decoded) -> Status {
    if (!decoded) return tl::unexpected(decoded.error());
    return ok();
  };
  switch (route.endpoint) {
    case Endpoint::kSubmit: {  // as Server::submit: one parse, a sweep or one job
      auto parsed = parse_json_body(body);
      if (!parsed) return tl::unexpected(parsed.error());
      auto sweep = decode_sweep_submit(*parsed, spec::kDefaultMaxSweepElements);
      if (!sweep || *sweep) return status(sweep);
      return status(spec_from_json(*parsed));
    }
    case Endpoint::kPlan: return status(decode_plan(body, spec::kDefaultMaxSweepElements));
    case Endpoint::kReleaseGpu: return status(decode_release(body));
    case Endpoint::kGc: return status(decode_gc(body));
    case Endpoint::kEvents: return status(decode_events_query(route.target));
    case Endpoint::kEventStream: return status(decode_stream_cursor(request, route.target));
    case Endpoint::kShow:
    case Endpoint::kArray:  // an array's name follows a job name's rules
    case Endpoint::kCancel: return status(parse_job_ref(route.subject));
    case Endpoint::kLog:
      if (auto ref = parse_job_ref(route.subject); !ref) return tl::unexpected(ref.error());
      return status(decode_log_query(route.target));
    case Endpoint::kControl:
    case Endpoint::kArrayControl:
      if (auto ref = parse_job_ref(route.subject); !ref) return tl::unexpected(ref.error());
      if (route.verb == "move") return status(decode_move(body));
      if (route.endpoint == Endpoint::kArrayControl) return status(decode_array_action(route.verb, body));
      return ok();
    case Endpoint::kStatus:  // as Server::status: finished first, then the page
      if (auto finished = decode_status_finished(route.target); !finished) {
        return tl::unexpected(finished.error());
      }
      return status(decode_pending_page(route.target));
    case Endpoint::kTimeline: return status(decode_timeline_query(route.target, now_ms));
    case Endpoint::kReport: return status(decode_report_query(route.target, now_ms));
    case Endpoint::kNone:
    case Endpoint::kMetrics:
    case Endpoint::kHealth:
    case Endpoint::kGpus:
    case Endpoint::kHooks:
    case Endpoint::kFleet:
    case Endpoint::kDashboardSession:
    case Endpoint::kMe:
    case Endpoint::kDrain: return ok();
  }
  return ok();
}

namespace {

// Feeds `raw` to `parser` until it holds a whole request; `ec` says why not otherwise, and
// `incomplete` is set when `raw` ended first.
void feed(RequestParser& parser, std::string_view raw, boost::system::error_code& ec, bool& incomplete) {
  limit_parser(parser);
  parser.eager(true);
  incomplete = false;
  boost::asio::const_buffer rest(raw.data(), raw.size());
  while (!parser.is_done() && rest.size() > 0) {
    size_t used = parser.put(rest, ec);
    rest += used;
    if (ec == http::error::need_more) {
      if (used == 0) {  // the parser holds a partial piece: the server would read more
        ec = {};
        incomplete = true;
        return;
      }
      ec = {};
      continue;
    }
    if (ec) return;
  }
  if (!ec && !parser.is_done()) incomplete = true;
}

}  // namespace

std::optional<Request> first_request(std::string_view raw) {
  RequestParser parser;
  boost::system::error_code ec;
  bool incomplete = false;
  feed(parser, raw, ec, incomplete);
  if (ec || incomplete) return std::nullopt;
  return parser.release();
}

int answer_status_for(std::string_view raw) { return answer_status_for(raw, wall_now_ms()); }

int answer_status_for(std::string_view raw, int64_t now_ms) {
  RequestParser parser;
  boost::system::error_code ec;
  bool incomplete = false;
  feed(parser, raw, ec, incomplete);
  // As the server: once the head is in, its framing and API version are judged before the body.
  if (parser.is_header_done()) {
    auto judged = refuse_ambiguous_framing(parser.get());
    if (!judged) judged = refuse_other_api_version(parser.get());
    if (judged) return static_cast<int>(judged->result_int());
  }
  if (ec) {
    auto refused = parse_error_response(ec);
    return refused ? static_cast<int>(refused->result_int()) : 0;
  }
  if (incomplete) return 0;
  const Request& request = parser.get();
  Route where = route(request.method(), std::string_view(request.target().data(), request.target().size()));
  if (where.endpoint == Endpoint::kNone) return static_cast<int>(http::status::not_found);
  if (auto checked = check_request(where, request, now_ms); !checked) return error_response(checked.error()).result_int();
  return static_cast<int>(http::status::ok);
}

}  // namespace gpuq::api
