// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the query string of every GET endpoint that reads query parameters. Byte 0
// chooses the endpoint (kCases below); the rest is the text after '?', as a client sends
// it. The target text goes through the daemon's own routing and percent-decoding
// (api::route, api::parse_target, api/http.h), then through the decoders the handlers use
// (api/bodies.h), at a fixed time so that an input answers the same on every run:
//   /v1/status           decode_status_finished, decode_pending_page (finished, pending_limit,
//                        pending_offset; active, user and arrays are compared as text)
//   /v1/events           decode_events_query (after, limit, wait_ms)
//   /v1/events/stream    decode_stream_cursor (after; without Last-Event-ID, and with an empty
//                        one, which leaves the cursor to the query)
//   /v1/jobs/7/log       decode_log_query (run, step, offset, limit), then read_in_slice with
//                        the offset and limit, as the handler reads a log or a step's part
//   /v1/timeline         decode_timeline_query (from_ms, to_ms), then the runs' overlap
//   /v1/report           decode_report_query (since, until, by), then the GPU-hours by group,
//                        the lost hours and the waits over the window, as the handler sums them
// Invariants: no exception escapes; the fuzz build's UBSan and ASan stay silent (signed
// overflow in a decoder or in the arithmetic on what it decoded is a crash there);
// check_request (what answer_status_for judges) agrees with the decoders, and answers 200 or
// 400 (docs/api.md lists no other status for a bad query); an error is `invalid_argument` with
// a message that names the parameter and quotes at most a clipped part of the value; decoded
// values lie in the ranges api/bodies.h documents; the percent-decoding round trips: each
// decoded key and value, re-encoded (every byte as %XX, or only what must be escaped, with
// '+' for a space) and parsed again, gives the same pairs, and the same answer.
#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "api/bodies.h"
#include "api/http.h"
#include "api/request_check.h"
#include "api/step_log.h"
#include "api/usage.h"
#include "fuzz_check.h"
#include "model/limits.h"

namespace {

using gpuq::Code;
using gpuq::Status;
using gpuq::api::Endpoint;
using gpuq::api::Target;
namespace api = gpuq::api;
namespace http = gpuq::api::http;
namespace limits = gpuq::limits;

// The time the requests are judged at: 2026-11-29T10:55:36.123Z.
constexpr int64_t kNowMs = 1'795'949'736'123;

// The longest message a bad query may get: its words, the parameter's name and a value
// clipped to 60 bytes (clip_for_message), never the whole query.
constexpr size_t kMostMessageBytes = 400;

// An endpoint as byte 0 picks it.
struct Case {
  std::string_view path;
  Endpoint endpoint;
  bool empty_last_event_id = false;  // /v1/events/stream: with `Last-Event-ID:` (empty)
};
constexpr std::array<Case, 7> kCases = {{
    {"/v1/status", Endpoint::kStatus},
    {"/v1/events", Endpoint::kEvents},
    {"/v1/events/stream", Endpoint::kEventStream},
    {"/v1/events/stream", Endpoint::kEventStream, true},
    {"/v1/jobs/7/log", Endpoint::kLog},
    {"/v1/timeline", Endpoint::kTimeline},
    {"/v1/report", Endpoint::kReport},
}};

// `text` with every byte as %XX (upper- or lower-case hex digits).
std::string escape_every_byte(std::string_view text, bool lower) {
  constexpr std::string_view kUpper = "0123456789ABCDEF";
  constexpr std::string_view kLower = "0123456789abcdef";
  std::string_view digits = lower ? kLower : kUpper;
  std::string out;
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    out += '%';
    out += digits[u >> 4];
    out += digits[u & 0xF];
  }
  return out;
}

// `text` as a form encodes it: a space as '+', the bytes that mean something in a query
// ('%', '+', '&', '=') as %XX, every other byte (control and non-ASCII bytes too) as it is.
std::string escape_form(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == ' ') {
      out += '+';
    } else if (c == '%' || c == '+' || c == '&' || c == '=') {
      out += escape_every_byte(std::string_view(&c, 1), false);
    } else {
      out += c;
    }
  }
  return out;
}

std::string requery(const Target& target, bool every_byte, bool lower) {
  std::string out;
  for (const auto& [key, value] : target.query) {
    if (!out.empty()) out += '&';
    out += every_byte ? escape_every_byte(key, lower) : escape_form(key);
    out += '=';
    out += every_byte ? escape_every_byte(value, lower) : escape_form(value);
  }
  return out;
}

// A bad query: 400 `invalid_argument`, with a short message.
void check_refusal(const gpuq::Error& error, std::string_view path) {
  FUZZ_CHECK(error.code == Code::kInvalidArgument, "{}: error code {} ({})", path,
             gpuq::code_name(error.code), error.message);
  FUZZ_CHECK(!error.message.empty(), "{}: an error without a message", path);
  FUZZ_CHECK(error.message.size() <= kMostMessageBytes, "{}: a message of {} bytes: {}...", path,
             error.message.size(), error.message.substr(0, 200));
  FUZZ_CHECK(api::error_response(error).result_int() == 400, "{}: {} answers {}", path,
             gpuq::code_name(error.code), api::error_response(error).result_int());
}

// Runs overlapping any window in various ways: long done, running since the epoch, failed,
// and one that starts in the far future.
const std::vector<gpuq::store::Store::UsageRun>& usage_runs() {
  using Run = gpuq::store::Store::UsageRun;
  static const std::vector<Run> runs = [] {
    std::vector<Run> out(4);
    out[0] = {1, 1, 1, "a", "alice", 1, 0, {"0"}, 0, kNowMs - 3'600'000, gpuq::RunOutcome::kSucceeded};
    out[1] = {2, 2, 1, "b", "bob", 2, 0, {"0", "1"}, 1, 0, gpuq::RunOutcome::kRunning};
    out[2] = {3, 3, 2, "", "", 1, kNowMs - 10, {"1"}, kNowMs - 5, kNowMs - 1, gpuq::RunOutcome::kFailed};
    out[3] = {4, 4, 1, "c", "carol", 8, 0, {"0", "1"}, limits::kEndOfTimeMs - 1, 0,
              gpuq::RunOutcome::kRunning};
    return out;
  }();
  return runs;
}

// What the handlers compute from a decoded window: every figure finite and not negative.
void check_window_sums(const api::Window& window, api::GroupBy by) {
  const std::vector<std::string> gpus = {"0", "1"};
  for (const auto& run : usage_runs()) {
    int64_t ms = api::clipped_ms(run, window, kNowMs);
    FUZZ_CHECK(ms >= 0 && ms <= window.length_ms(), "run {} overlaps [{}, {}) for {} ms", run.run_id,
               window.from_ms, window.to_ms, ms);
  }
  for (const auto& group : api::gpu_hours_by(usage_runs(), by, window, kNowMs, gpus)) {
    FUZZ_CHECK(group.gpu_hours >= 0 && group.share >= 0, "group {}: {} GPU-hours, share {}", group.key,
               group.gpu_hours, group.share);
  }
  for (const auto& [outcome, hours] : api::lost_gpu_hours(usage_runs(), window, kNowMs)) {
    FUZZ_CHECK(hours >= 0, "lost {} GPU-hours to {}", hours, outcome);
  }
  api::Waits waits = api::waits(usage_runs(), window);
  for (const auto& w : waits.by_user) FUZZ_CHECK(w.max_s >= 0, "user {} waited {} s", w.key, w.max_s);
}

void check_window(const api::Window& window, std::string_view path, int64_t earliest, int64_t latest) {
  FUZZ_CHECK(window.from_ms >= earliest && window.from_ms < window.to_ms && window.to_ms <= latest,
             "{}: window [{}, {})", path, window.from_ms, window.to_ms);
  FUZZ_CHECK(window.to_ms - window.from_ms <= limits::kMaxReportWindowMs, "{}: window [{}, {}) is too long",
             path, window.from_ms, window.to_ms);
}

// The decoders of `endpoint`'s handler over `target`; ok when every one decodes. Checks what
// each decoded.
Status decode(const Case& endpoint, const Target& target, const api::Request& request) {
  std::string_view path = endpoint.path;
  switch (endpoint.endpoint) {
    case Endpoint::kStatus: {
      auto finished = api::decode_status_finished(target);
      if (!finished) return tl::unexpected(finished.error());
      auto page = api::decode_pending_page(target);
      if (!page) return tl::unexpected(page.error());
      if (*page) {
        FUZZ_CHECK((*page)->limit <= api::kMaxPendingLimit && (*page)->offset <= INT32_MAX,
                   "{}: a page of {} at {}", path, (*page)->limit, (*page)->offset);
      }
      return gpuq::ok();
    }
    case Endpoint::kEvents: {
      auto query = api::decode_events_query(target);
      if (!query) return tl::unexpected(query.error());
      FUZZ_CHECK(query->after >= 0 && query->limit >= 0 && query->limit <= limits::kMaxEventsPerPage &&
                     query->wait_ms >= 0 && query->wait_ms <= limits::kMaxEventWaitMs,
                 "{}: after {}, limit {}, wait_ms {}", path, query->after, query->limit, query->wait_ms);
      return gpuq::ok();
    }
    case Endpoint::kEventStream: {
      auto cursor = api::decode_stream_cursor(request, target);
      if (!cursor) return tl::unexpected(cursor.error());
      FUZZ_CHECK(*cursor >= 0 && *cursor <= limits::kMaxId, "{}: cursor {}", path, *cursor);
      return gpuq::ok();
    }
    case Endpoint::kLog: {
      auto query = api::decode_log_query(target);
      if (!query) return tl::unexpected(query.error());
      FUZZ_CHECK((!query->run || *query->run >= 1) && (!query->step || *query->step >= 0) &&
                     query->offset >= 0 && query->limit >= 0 && query->limit <= limits::kMaxLogChunk,
                 "{}: run {}, step {}, offset {}, limit {}", path, query->run.value_or(-1),
                 query->step.value_or(-1), query->offset, query->limit);
      // The whole log of a run, a step's part and a step still running, in logs of a few sizes.
      const std::array<api::StepSlice, 3> slices = {{{1, "", 0, std::nullopt},
                                                     {2, "succeeded", 100, 4'000},
                                                     {2, "running", 4'000, std::nullopt}}};
      for (const auto& slice : slices) {
        for (int64_t log_size : {int64_t{0}, int64_t{150}, int64_t{1} << 40, INT64_MAX}) {
          auto read = api::read_in_slice(slice, log_size, query->offset, query->limit);
          FUZZ_CHECK(read.first >= 0 && read.count >= 0 && read.count <= query->limit &&
                         read.count <= log_size - read.first && read.size >= 0,
                     "{}: offset {} limit {} in a log of {}: read {} bytes at {} of {}", path,
                     query->offset, query->limit, log_size, read.count, read.first, read.size);
        }
      }
      return gpuq::ok();
    }
    case Endpoint::kTimeline: {
      auto window = api::decode_timeline_query(target, kNowMs);
      if (!window) return tl::unexpected(window.error());
      // from_ms and to_ms as given lie in [0, kEndOfTimeMs]; from_ms's default, a day before
      // to_ms, may start before 1970 (to_ms=0 gives [-86400000, 0)).
      constexpr int64_t kDayMs = 86'400'000;
      check_window(*window, path, -kDayMs, limits::kEndOfTimeMs);
      check_window_sums(*window, api::GroupBy::kUser);
      return gpuq::ok();
    }
    case Endpoint::kReport: {
      auto query = api::decode_report_query(target, kNowMs);
      if (!query) return tl::unexpected(query.error());
      check_window(query->window, path, INT64_MIN, kNowMs);
      check_window_sums(query->window, query->by);
      return gpuq::ok();
    }
    default: break;
  }
  FUZZ_CHECK(false, "{}: no decoder for this endpoint", path);
  return gpuq::ok();
}

// Routes `path?query`, decodes it and judges it as answer_status_for does; returns the
// routed target for the round trip.
Target judge(const Case& endpoint, std::string_view query, bool* decoded) {
  std::string text = std::string(endpoint.path) + "?" + std::string(query);
  api::Route where = api::route(http::verb::get, text);
  FUZZ_CHECK(where.endpoint == endpoint.endpoint, "{}: the query moved the request to another endpoint",
             endpoint.path);
  api::Request request{http::verb::get, text, 11};
  if (endpoint.empty_last_event_id) request.set("Last-Event-ID", "");
  Status checked = api::check_request(where, request, kNowMs);
  Status decoders = decode(endpoint, where.target, request);
  FUZZ_CHECK(checked.has_value() == decoders.has_value(),
             "{}: check_request says {}, the handler's decoders {}", endpoint.path,
             checked ? "ok" : checked.error().message, decoders ? "ok" : decoders.error().message);
  if (!checked) {
    check_refusal(checked.error(), endpoint.path);
    FUZZ_CHECK(checked.error().message == decoders.error().message,
               "{}: check_request says '{}', the handler's decoders '{}'", endpoint.path,
               checked.error().message, decoders.error().message);
  }
  *decoded = checked.has_value();
  return std::move(where.target);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Case& endpoint = kCases[data[0] % kCases.size()];
  const bool lower = (data[0] / kCases.size()) % 2 == 1;  // the hex digits of the round trip
  std::string_view query = gpuq::fuzz::as_text(data + 1, size - 1);

  bool decoded = false;
  Target target = judge(endpoint, query, &decoded);

  // The round trip: what was decoded, encoded again two ways, decodes to the same pairs and
  // gets the same answer.
  for (bool every_byte : {true, false}) {
    std::string again = requery(target, every_byte, lower);
    bool decoded_again = false;
    Target reparsed = judge(endpoint, again, &decoded_again);
    FUZZ_CHECK(reparsed.query == target.query, "{}: '{}' parsed to {} pairs, re-encoded as '{}' to {}",
               endpoint.path, query.substr(0, 200), target.query.size(), again.substr(0, 200),
               reparsed.query.size());
    FUZZ_CHECK(decoded_again == decoded, "{}: '{}' decoded {}, re-encoded as '{}' {}", endpoint.path,
               query.substr(0, 200), decoded ? "ok" : "to an error", again.substr(0, 200),
               decoded_again ? "ok" : "to an error");
  }
  return 0;
}
