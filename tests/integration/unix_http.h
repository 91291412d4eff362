// SPDX-License-Identifier: Apache-2.0
// Raw HTTP to a daemon's unix socket with libcurl, for end-to-end tests of what the CLI does not
// show or send: /metrics text, the Server-Sent Events stream, bodies and headers the CLI would
// never send; and bare connections, for the listener's limits. Synchronous; each call is
// independent, so calls may run on several threads at once.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace gpuq::testing {

struct HttpAnswer {
  int curl_code = -1;  // CURLcode; 0 when the transfer completed
  long status = 0;
  std::string content_type;
  std::string body;
  std::string api_version;  // the answer's Gpuq-Api header (unix_request); "" when it has none
};

// GET `path` (e.g. "/metrics") on the unix socket at `socket`.
HttpAnswer unix_get(const std::string& socket, const std::string& path,
                    const std::vector<std::string>& headers = {}, int timeout_ms = 30'000);

// `method` (GET, POST) `path` with `body` (sent as application/json when not empty).
HttpAnswer unix_request(const std::string& socket, const std::string& method, const std::string& path,
                        const std::string& body, const std::vector<std::string>& headers = {},
                        int timeout_ms = 30'000);

// POST `body` (JSON) to `path`, for the answer codes of the endpoints (the CLI shows only
// success or failure).
HttpAnswer unix_post(const std::string& socket, const std::string& path, const std::string& body,
                     int timeout_ms = 30'000);

// A bare connection to the unix socket (the caller closes it); -1 when connecting fails.
int unix_connect(const std::string& socket);
// Reads `fd` until the peer closes it (end of file or a reset) and returns true, or returns
// false when `timeout_ms` passes first. What arrives before the close is dropped.
bool wait_closed_by_peer(int fd, int timeout_ms = 30'000);

// One Server-Sent Events frame; `id` is -1 when the frame had no id line.
struct SseFrame {
  long long id = -1;
  std::string event;
  std::string data;
};

struct SseResult {
  int curl_code = -1;  // CURLE_WRITE_ERROR when `until` ended it, as it should
  long status = 0;
  std::string content_type;
  std::vector<SseFrame> frames;
  int comments = 0;    // comment lines (": keepalive") seen
};

// Streams `path` and collects frames until `until(frames)` holds (checked after every frame;
// the connection is then dropped) or `timeout_ms` passes. `until` runs on the calling thread.
SseResult unix_sse(const std::string& socket, const std::string& path,
                   const std::vector<std::string>& headers,
                   const std::function<bool(const std::vector<SseFrame>&)>& until,
                   int timeout_ms = 60'000);

}  // namespace gpuq::testing
