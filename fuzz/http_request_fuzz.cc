// SPDX-License-Identifier: Apache-2.0
// Fuzz target: one HTTP/1.1 request as a client writes it to the daemon's unix socket. The
// bytes go to api::answer_status_for (api/request_check.h), which parses them with Beast under
// the daemon's limits (16 KiB of request line and header, 8 MiB of body), routes them, and
// decodes the body, query and job reference with the decoders the handlers use: submit
// (POST /v1/jobs), plan (POST /v1/plans), move (POST /v1/jobs/ID/move), release
// (POST /v1/gpus/GPU/release), gc (POST /v1/gc), the events, log and stream queries, and the
// timeline's and the report's windows (GET /v1/timeline, GET /v1/report), judged at a fixed
// time so that an input answers the same on every run.
// Invariants: the answer is 0 (the server would wait for more bytes) or one of the statuses
// request_check.h documents (200, 400, 404, 413, 431), an HTTP status in 200..599 in any
// case; it is the same when more bytes follow the request (bytes after the first request are
// not read). No exception escapes, whatever the bytes.
// The same request as if it came over TCP, judged by the TCP policy (api/http_policy.h) with a
// token the bytes do not hold: it never reaches the API (a handler) without the token, whatever
// its Host, Origin, cookies or path; a submit never passes; and whatever the policy answers
// itself carries the security headers.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>

#include "api/http_policy.h"
#include "api/request_check.h"
#include "fuzz_check.h"

namespace {

// What request_check.h says answer_status_for answers.
constexpr std::array<int, 6> kDocumentedAnswers = {0, 200, 400, 404, 413, 431};

// The wall-clock time the requests are judged at: 2026-11-29T10:55:36.123Z.
constexpr int64_t kNowMs = 1'795'949'736'123;

// A second request on the same connection, sent after the first.
constexpr std::string_view kNextRequest = "GET /v1/health HTTP/1.1\r\nHost: gpuq\r\n\r\n";

bool is_documented(int answer) {
  return std::find(kDocumentedAnswers.begin(), kDocumentedAnswers.end(), answer) !=
         kDocumentedAnswers.end();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view raw = gpuq::fuzz::as_text(data, size);
  const int answer = gpuq::api::answer_status_for(raw, kNowMs);
  FUZZ_CHECK(answer == 0 || (answer >= 200 && answer <= 599), "answered {}, no HTTP status",
             answer);
  FUZZ_CHECK(is_documented(answer), "answered {}, which request_check.h does not document", answer);
  if (answer == 0) return 0;

  if (auto request = gpuq::api::first_request(raw)) {
    static const auto policy = gpuq::api::TcpPolicy::make(
        std::string(64, 'f'), gpuq::ListenAddress{"127.0.0.1", 7878, false}, {"gpubox.lan"}, false);
    auto judged = gpuq::api::judge_tcp_request(policy, *request);
    bool holds_token = raw.find(policy.token) != std::string_view::npos;
    FUZZ_CHECK(judged.has_value() || holds_token,
               "a request without the token went through to the API: {} {}",
               std::string(request->method_string()), std::string(request->target()));
    if (judged) {
      FUZZ_CHECK(judged->find("Content-Security-Policy") != judged->end(),
                 "the policy answered {} without its security headers", judged->result_int());
    }
  }

  std::string followed = std::string(raw) + std::string(kNextRequest);
  const int again = gpuq::api::answer_status_for(followed, kNowMs);
  FUZZ_CHECK(again == answer, "answered {} alone and {} with another request after it", answer,
             again);
  return 0;
}
