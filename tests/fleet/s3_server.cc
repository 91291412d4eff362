// SPDX-License-Identifier: Apache-2.0
#include "s3_server.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

extern char** environ;

namespace gpuq::fleet::testing {
namespace {

constexpr int kMissingMoto = 77;         // s3_server.py's status when moto cannot be imported
constexpr int kStartTimeoutMs = 60'000;  // moto's import is slow on a loaded machine
constexpr int kStopTimeoutMs = 5'000;    // SIGTERM's grace before SIGKILL

// Reads one line from `fd` within `timeout_ms`; "" on end of file or timeout.
std::string read_line(int fd, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string line;
  while (line.empty() || line.back() != '\n') {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return "";
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return "";
    char c = 0;
    const ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return "";
    line.push_back(c);
  }
  line.pop_back();
  return line;
}

bool port_answers(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool connected =
      ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  return connected;
}

// Waits for `pid` to end within `timeout_ms`; its wait status, or -1 while it still runs.
int wait_for_exit(pid_t pid, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid || (done < 0 && errno == ECHILD)) return done == pid ? status : 0;
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

size_t discard(char*, size_t size, size_t count, void*) { return size * count; }

size_t append(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

void init_curl() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// An unsigned request to the server's side channel (s3_server.py's /__gpuq_counts); its body.
Result<std::string> side_channel(const std::string& url, const char* method) {
  init_curl();
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return fail(Code::kInternal, "libcurl could not create a handle");
  std::string body;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
  if (std::string_view(method) == "POST") curl_easy_setopt(curl, CURLOPT_POSTFIELDS, "");
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 10'000L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  const CURLcode code = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(curl);
  if (code != CURLE_OK) {
    return fail(Code::kUnavailable, fmt::format("{} {}: {}", method, url, curl_easy_strerror(code)));
  }
  if (status != 200) return fail(Code::kIoError, fmt::format("{} {}: HTTP {}", method, url, status));
  return body;
}

}  // namespace

Result<std::unique_ptr<S3Server>> S3Server::start(const std::string& bucket) {
  int to_child[2] = {-1, -1};
  int from_child[2] = {-1, -1};
  if (::pipe2(to_child, O_CLOEXEC) != 0) return errno_error("pipe");
  if (::pipe2(from_child, O_CLOEXEC) != 0) {
    ::close(to_child[0]);
    ::close(to_child[1]);
    return errno_error("pipe");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
  std::string python = "python3";
  std::string script = GPUQ_S3_SERVER_SCRIPT;
  std::string port = "0";
  std::string bucket_arg = bucket;
  char* argv[] = {python.data(), script.data(), port.data(), bucket_arg.data(), nullptr};
  std::unique_ptr<S3Server> server(new S3Server());
  const int spawned = ::posix_spawnp(&server->pid_, "python3", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(to_child[0]);
  ::close(from_child[1]);
  server->stdin_fd_ = to_child[1];
  if (spawned != 0) {
    server->pid_ = -1;
    ::close(from_child[0]);
    return fail(Code::kFailedPrecondition,
                fmt::format("cannot run python3 for the S3 server: {}", std::strerror(spawned)));
  }
  const std::string line = read_line(from_child[0], kStartTimeoutMs);
  ::close(from_child[0]);
  std::istringstream words(line);
  std::string ready;
  words >> ready >> server->port_ >> server->access_key_id_ >> server->secret_access_key_;
  if (ready != "ready" || server->port_ <= 0 || server->secret_access_key_.empty()) {
    ::kill(server->pid_, SIGKILL);
    const int status = wait_for_exit(server->pid_, kStopTimeoutMs);
    server->pid_ = -1;
    if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == kMissingMoto) {
      return fail(Code::kFailedPrecondition,
                  "python3 cannot import moto, so there is no S3 server to test against "
                  "(pip install 'moto[server]')");
    }
    return fail(Code::kInternal,
                fmt::format("the S3 server ({} {}) did not start: it said \"{}\" (its stderr is "
                            "in the test's output)",
                            python, script, line));
  }
  server->bucket_ = bucket;
  // It prints "ready" once listening; a connection proves it.
  if (!port_answers(server->port_)) {
    return fail(Code::kInternal,
                fmt::format("the S3 server said it listens on {} but does not answer there",
                            server->port_));
  }
  return server;
}

S3Server::~S3Server() {
  if (stdin_fd_ >= 0) ::close(stdin_fd_);
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  if (wait_for_exit(pid_, kStopTimeoutMs) < 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

std::string S3Server::endpoint() const { return fmt::format("http://127.0.0.1:{}", port_); }

StoreOptions S3Server::options() const {
  StoreOptions options;
  options.endpoint = endpoint();
  options.region = "us-east-1";
  options.access_key_id = access_key_id_;
  options.secret_access_key = secret_access_key_;
  options.timeout_ms = 10'000;
  options.retries = 2;
  options.backoff_ms = 10;
  return options;
}

std::string S3Server::url(const std::string& prefix) const {
  return "s3://" + bucket_ + (prefix.empty() ? "" : "/" + prefix);
}

Status S3Server::create_bucket(const std::string& name) {
  init_curl();
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return fail(Code::kInternal, "libcurl could not create a handle");
  const std::string url = endpoint() + "/" + name;
  curl_slist* headers = curl_slist_append(nullptr, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "PUT");
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, "");
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 10'000L);
  curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, "aws:amz:us-east-1:s3");
  curl_easy_setopt(curl, CURLOPT_USERNAME, access_key_id_.c_str());
  curl_easy_setopt(curl, CURLOPT_PASSWORD, secret_access_key_.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard);
  const CURLcode code = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (code != CURLE_OK) {
    return fail(Code::kUnavailable, fmt::format("PUT {}: {}", url, curl_easy_strerror(code)));
  }
  if (status != 200) return fail(Code::kIoError, fmt::format("PUT {}: HTTP {}", url, status));
  return ok();
}

Result<RequestCounts> S3Server::counts() const {
  auto body = side_channel(endpoint() + "/__gpuq_counts", "GET");
  if (!body) return tl::unexpected(body.error());
  auto doc = nlohmann::json::parse(*body, nullptr, false);
  if (!doc.is_object()) return fail(Code::kIoError, "the S3 server's counts are not a JSON object: " + *body);
  RequestCounts counts;
  try {
    counts.get = doc.at("get").get<int64_t>();
    counts.not_modified = doc.at("not_modified").get<int64_t>();
    counts.put = doc.at("put").get<int64_t>();
    counts.list = doc.at("list").get<int64_t>();
    counts.remove = doc.at("delete").get<int64_t>();
    counts.head = doc.at("head").get<int64_t>();
    counts.other = doc.at("other").get<int64_t>();
    for (const auto& r : doc.at("requests")) {
      counts.requests.push_back({r.at("t").get<double>(), r.at("method").get<std::string>(),
                                 r.at("kind").get<std::string>(), r.at("key").get<std::string>(),
                                 r.at("status").get<int>(), r.value("ms", 0.0)});
    }
  } catch (const nlohmann::json::exception& e) {
    return fail(Code::kIoError, fmt::format("the S3 server's counts: {}", e.what()));
  }
  return counts;
}

Status S3Server::reset_counts() {
  auto body = side_channel(endpoint() + "/__gpuq_counts", "POST");
  if (!body) return tl::unexpected(body.error());
  return ok();
}

}  // namespace gpuq::fleet::testing
