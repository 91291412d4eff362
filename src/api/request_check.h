// SPDX-License-Identifier: Apache-2.0
// What the daemon would answer to the raw bytes of one HTTP request, judged without a daemon:
// the same Beast parser limits (limit_parser), the same routing (route) and the same body,
// query and job-reference decoders (bodies.h) as the server's handlers. Meant for a fuzz target
// (bytes in, a status out, never a crash, a hang or an exception) and for tests of the limits.
// Pure (but for answer_status_for without a time, which reads the clock); thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "api/http.h"

namespace gpuq::api {

// Refuses what the server refuses before any handler runs: nothing for the routes without a
// body or numeric query, the decoded body and query for the rest. `now_ms` is the wall-clock
// time the handler would read (the timeline's and the report's windows are relative to it).
Status check_request(const Route& route, const Request& request, int64_t now_ms);

// The HTTP status the daemon would answer to `raw`, the first request on a connection:
// 400 as soon as its head is in when the head's framing is ambiguous or it names another API
// version (refuse_ambiguous_framing, refuse_other_api_version); 400, 413 or 431 when the
// parser refuses it; 404 when no endpoint matches; 400 when its
// body, query or job reference does not decode; 200 when it would reach its handler (which
// may still refuse it for the queue's state: an unknown job, a GPU not in attention); and 0
// when `raw` ends before the request does (the server would wait for the rest, until the
// idle timeout closes the connection). Bytes after the first request are not read. The
// timeline's and the report's windows are judged at `now_ms` (the wall clock without it).
int answer_status_for(std::string_view raw, int64_t now_ms);
int answer_status_for(std::string_view raw);

// The first request in `raw`, parsed under the same limits; null when the parser refuses it or
// `raw` ends before it does. For the fuzz target of the TCP policy (http_policy.h).
std::optional<Request> first_request(std::string_view raw);

}  // namespace gpuq::api
