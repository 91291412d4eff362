// SPDX-License-Identifier: Apache-2.0
#include "cli/daemon_client.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include "base/api_version.h"
#include "base/paths.h"
#include "cli/exit_codes.h"

namespace gpuq::cli {
namespace {

// Quotes a path for a shell command line only when it needs it.
std::string shell_word(const std::string& text) {
  bool plain = !text.empty();
  for (char c : text) {
    plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '.' ||
                      c == '_' || c == '-' || c == '+' || c == ':' || c == ',' || c == '@');
  }
  if (plain) return text;
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// A daemon's JSON error as a CliError (its message and code), or a description of an answer
// that is not one.
CliError daemon_error(const HttpResponse& response) {
  Json body = Json::parse(response.body, nullptr, false);
  if (!body.is_discarded() && body.is_object()) {
    auto it = body.find("error");
    if (it != body.end() && it->is_object()) {
      std::string message = json_string(*it, "message");
      std::string code = json_string(*it, "code");
      if (!message.empty()) return CliError{kExitFailed, message, code};
      if (!code.empty()) {
        return CliError{kExitFailed,
                        fmt::format("the daemon answered {} ({})", code, response.status), code};
      }
    }
  }
  std::string excerpt = response.body.substr(0, 200);
  while (!excerpt.empty() && (excerpt.back() == '\n' || excerpt.back() == '\r')) excerpt.pop_back();
  return CliError{kExitFailed, fmt::format("the daemon answered HTTP {}{}{}", response.status,
                                           excerpt.empty() ? "" : ": ", excerpt),
                  ""};
}

}  // namespace

DaemonClient::DaemonClient(TransportFactory factory, std::string home, bool home_given, std::string url,
                           std::string token_withheld)
    : factory_(std::move(factory)),
      home_(std::move(home)),
      home_given_(home_given),
      url_(std::move(url)),
      token_withheld_(std::move(token_withheld)) {}

std::string DaemonClient::socket_path() const {
  std::string own = HomeLayout{home_}.socket();
  if (home_given_) return own;
  // No daemon of the user's own (not even a stale socket): the box's system daemon, if any.
  struct stat info {};
  if (::lstat(own.c_str(), &info) == 0) return own;
  std::string system = system_socket_path();
  if (::lstat(system.c_str(), &info) == 0) return system;
  return own;
}

std::string DaemonClient::no_daemon_message(const std::string& why) const {
  if (!url_.empty()) {
    return fmt::format("no daemon answers at {} ({}). Check the address: `gpuq dashboard` on the "
                       "daemon's machine shows it",
                       url_, why);
  }
  if (std::string path = socket_path(); path != HomeLayout{home_}.socket()) {
    return fmt::format("the box's daemon at {} does not answer ({}): ask its admin, or start "
                       "one of your own with: gpuq daemon --detach",
                       path, why);
  }
  return fmt::format("no daemon is running for {} ({}). Start one with: gpuq daemon --detach{}",
                     home_, why, home_given_ ? " --home " + shell_word(home_) : "");
}

std::string DaemonClient::other_api_version(const HttpResponse& response) const {
  std::string text = response.header(kApiVersionHeader);
  if (text.empty()) return "";  // a daemon from before versions: it speaks the first
  auto version = parse_api_version(text);
  if (version == kApiVersion) return "";
  std::string daemon = url_.empty() ? "the daemon for " + home_ : "the daemon at " + url_;
  return fmt::format(
      "{} speaks gpuq API {} and this gpuq speaks API {}: run the gpuq that matches the "
      "daemon (`gpuq --version` prints its API), or restart the daemon with this gpuq",
      daemon, version ? std::to_string(*version) : "'" + text.substr(0, 40) + "'", kApiVersion);
}

Outcome<HttpResponse> DaemonClient::send(const HttpRequest& request) {
  if (!transport_) {
    auto made = factory_(socket_path());
    if (!made) return cli_fail(kExitFailed, made.error().message);
    transport_ = std::move(*made);
  }
  auto response = transport_->send(request);
  if (!response) {
    if (response.error().code == Code::kUnavailable) {
      return cli_fail(kExitNoDaemon, no_daemon_message(response.error().message));
    }
    return cli_fail(kExitFailed, response.error().message);
  }
  if (auto refused = other_api_version(*response); !refused.empty()) {
    return cli_fail(kExitFailed, refused);
  }
  if (response->status < 200 || response->status >= 300) {
    CliError error = daemon_error(*response);
    if (response->status == 401 && !token_withheld_.empty()) error.message += "; " + token_withheld_;
    return tl::unexpected(error);
  }
  return std::move(*response);
}

Outcome<HttpResponse> DaemonClient::get(const std::string& target, Millis timeout) {
  return send(HttpRequest{Method::kGet, target, "", timeout});
}

Outcome<HttpResponse> DaemonClient::post(const std::string& target, const std::string& body,
                                         Millis timeout) {
  return send(HttpRequest{Method::kPost, target, body, timeout});
}

Outcome<Json> DaemonClient::get_json(const std::string& target, Millis timeout) {
  auto response = get(target, timeout);
  if (!response) return tl::unexpected(response.error());
  return parse_json(response->body);
}

Outcome<Json> DaemonClient::post_json(const std::string& target, const Json& body) {
  auto response = post(target, json_text(body));
  if (!response) return tl::unexpected(response.error());
  return parse_json(response->body);
}

std::string percent_encode(std::string_view text) {
  std::string out;
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += c;
    } else {
      out += fmt::format("%{:02X}", u);
    }
  }
  return out;
}

std::string job_path(std::string_view ref) { return "/v1/jobs/" + percent_encode(ref); }

Outcome<Json> parse_json(std::string_view body) {
  Json value = Json::parse(body, nullptr, false);
  if (value.is_discarded()) {
    return cli_fail(kExitFailed,
                    fmt::format("the daemon's answer is not JSON: {}", body.substr(0, 200)));
  }
  return value;
}

std::string json_string(const Json& object, std::string_view key, std::string fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return fallback;
  return it->get<std::string>();
}

std::optional<int64_t> json_int(const Json& object, std::string_view key) {
  if (!object.is_object()) return std::nullopt;
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  if (it->is_number_float()) return static_cast<int64_t>(it->get<double>());
  return it->get<int64_t>();
}

const Json& json_array(const Json& object, std::string_view key) {
  static const Json kEmpty = Json::array();
  if (!object.is_object()) return kEmpty;
  auto it = object.find(key);
  if (it == object.end() || !it->is_array()) return kEmpty;
  return *it;
}

std::string json_text(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace gpuq::cli
