// SPDX-License-Identifier: Apache-2.0
// The daemon's HTTP API (docs/api.md) as the CLI sees it: GET/POST over a Transport that is
// created on first use, with the error handling every command shares:
//  - a daemon that cannot be reached → "no daemon is running for <home> ..." and exit 3;
//  - a daemon's JSON error ({"error":{"code","message"}}) → its message and exit 1;
//  - a daemon that speaks another API version (its `Gpuq-Api` header) → which versions met and
//    what to do, exit 1;
//  - anything else that fails on the way → a message and exit 1.
// Also small helpers to read the daemon's JSON without exceptions.
// Owns its Transport; one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "cli/transport.h"

namespace gpuq::cli {

// Key order as the daemon sent it, so `--json` output reads like the daemon's answer.
using Json = nlohmann::ordered_json;

constexpr Millis kRequestTimeout{30'000};
constexpr Millis kLongPollSlack{10'000};  // a long-poll's timeout is its wait_ms plus this

// A failure of a client command: what to tell the user and how the process should exit.
struct CliError {
  int exit_code = 1;
  std::string message;
  std::string code;  // the daemon's error code ("conflict") when the daemon refused; else empty
};
template <class T>
using Outcome = tl::expected<T, CliError>;

inline tl::unexpected<CliError> cli_fail(int exit_code, std::string message) {
  return tl::unexpected<CliError>(CliError{exit_code, std::move(message), ""});
}

using TransportFactory =
    std::function<Result<std::unique_ptr<Transport>>(const std::string& socket_path)>;

class DaemonClient {
 public:
  // `home` is the resolved state directory; `home_given` says whether --home named it, so the
  // "start one with" hint can repeat it. `url` is the daemon's HTTP address under `gpuq --url`
  // (the factory then makes a TCP transport), empty for the unix socket. `token_withheld` says
  // why no token went with the requests, and is added to the error of an answer 401.
  DaemonClient(TransportFactory factory, std::string home, bool home_given, std::string url = "",
               std::string token_withheld = "");

  // Successful (2xx) answers only; anything else becomes a CliError.
  Outcome<HttpResponse> get(const std::string& target, Millis timeout = kRequestTimeout);
  Outcome<HttpResponse> post(const std::string& target, const std::string& body,
                             Millis timeout = kRequestTimeout);
  Outcome<Json> get_json(const std::string& target, Millis timeout = kRequestTimeout);
  Outcome<Json> post_json(const std::string& target, const Json& body);

 private:
  Outcome<HttpResponse> send(const HttpRequest& request);
  std::string no_daemon_message(const std::string& why) const;
  // The socket to use: the home's; without --home, when the home has none, the box's system
  // daemon's (base/paths.h system_socket_path) if it exists.
  std::string socket_path() const;
  // What to tell the user when the daemon's answer says it speaks another API version
  // (base/api_version.h); "" when it speaks this one.
  std::string other_api_version(const HttpResponse& response) const;

  TransportFactory factory_;
  std::string home_;
  bool home_given_;
  std::string url_;
  std::string token_withheld_;
  std::unique_ptr<Transport> transport_;
};

// "/v1/jobs/<ref>" with `ref` (an id or a name) percent-encoded.
std::string job_path(std::string_view ref);
std::string percent_encode(std::string_view text);

// Parses a JSON body without throwing.
Outcome<Json> parse_json(std::string_view body);

// Field readers that never throw: absent or mistyped fields read as the fallback / nullopt.
std::string json_string(const Json& object, std::string_view key, std::string fallback = "");
std::optional<int64_t> json_int(const Json& object, std::string_view key);
const Json& json_array(const Json& object, std::string_view key);  // empty array when absent
// Compact one-line text of any JSON value; never throws (bad UTF-8 is replaced).
std::string json_text(const Json& value);

}  // namespace gpuq::cli
