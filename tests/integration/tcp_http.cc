// SPDX-License-Identifier: Apache-2.0
#include "tcp_http.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include <fmt/format.h>

#include "unix_http.h"

namespace gpuq::testing {
namespace {

struct Transfer {
  TcpAnswer* answer;
  bool stop_at_first_frame;
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  t->answer->body.append(data, size * count);
  if (t->stop_at_first_frame && t->answer->body.find("\n\n") != std::string::npos) return 0;
  return size * count;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  std::string line(data, size * count);
  size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ')) value.erase(0, 1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n')) value.pop_back();
    // A field sent more than once (Set-Cookie) keeps every value, one per line.
    auto& fields = *static_cast<std::map<std::string, std::string>*>(user);
    auto [it, added] = fields.emplace(name, value);
    if (!added) it->second += "\n" + value;
  }
  return size * count;
}

// The statuses of the answers in `text`: each "HTTP/1.x NNN" at the start of an answer, the
// next answer found after the previous one's head and Content-Length body.
std::vector<int> answer_statuses(const std::string& text) {
  std::vector<int> statuses;
  size_t at = 0;
  while (text.compare(at, 7, "HTTP/1.") == 0 && at + 12 <= text.size()) {
    statuses.push_back(std::atoi(text.substr(at + 9, 3).c_str()));
    size_t head_end = text.find("\r\n\r\n", at);
    if (head_end == std::string::npos) break;
    std::string head = text.substr(at, head_end - at);
    for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    size_t length = 0;
    if (size_t cl = head.find("\r\ncontent-length:"); cl != std::string::npos) {
      length = std::strtoul(head.c_str() + cl + 17, nullptr, 10);
    }
    at = head_end + 4 + length;
  }
  return statuses;
}

}  // namespace

TcpAnswer tcp_request(const std::string& method, const std::string& url,
                      const std::vector<std::string>& headers, const std::string& body,
                      bool stop_at_first_frame) {
  static const bool initialised = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  (void)initialised;
  TcpAnswer answer;
  Transfer transfer{&answer, stop_at_first_frame};
  CURL* curl = curl_easy_init();
  curl_slist* list = nullptr;
  for (const auto& h : headers) list = curl_slist_append(list, h.c_str());
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 30'000L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &answer.headers);
  if (method == "POST") {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    curl_easy_setopt(curl, CURLOPT_COPYPOSTFIELDS, body.c_str());
  } else if (method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (method != "GET") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  }
  answer.curl_code = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &answer.status);
  curl_slist_free_all(list);
  curl_easy_cleanup(curl);
  return answer;
}

std::string code_of(const std::string& body) {
  auto json = nlohmann::json::parse(body, nullptr, false);
  if (!json.is_object() || !json.contains("error")) return "";
  return json["error"].value("code", "");
}

std::string RawAnswer::body() const {
  size_t head_end = text.find("\r\n\r\n");
  if (head_end == std::string::npos) return "";
  std::string rest = text.substr(head_end + 4);
  size_t end = rest.find("\nHTTP/1.");
  return end == std::string::npos ? rest : rest.substr(0, end + 1);
}

int tcp_connect(const std::string& listen) {
  size_t colon = listen.rfind(':');
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::stoi(listen.substr(colon + 1))));
  if (::inet_pton(AF_INET, listen.substr(0, colon).c_str(), &addr.sin_addr) != 1) return -1;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

RawAnswer raw_exchange(const std::string& listen, std::string_view bytes, int timeout_ms) {
  RawAnswer answer;
  int fd = tcp_connect(listen);
  if (fd < 0) return answer;
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the daemon may close before it read everything
    sent += static_cast<size_t>(n);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  char buffer[16 << 10];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      answer.closed = true;
      break;
    }
    answer.text.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  answer.statuses = answer_statuses(answer.text);
  return answer;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

double connection_metric(const Harness& h, const std::string& name, const std::string& cls) {
  auto metrics = unix_get(h.home() + "/gpuq.sock", "/metrics");
  std::regex line(fmt::format(R"({}\{{class="{}"\}} ([0-9.e+]+))", name, cls));
  std::smatch m;
  if (!std::regex_search(metrics.body, m, line)) return -1;
  return std::stod(m[1]);
}

TcpDaemon::TcpDaemon(Harness& h, std::vector<std::string> flags) {
  flags.insert(flags.begin(), {"--http", "127.0.0.1:0"});
  h.start(flags);
  auto health = h.health();
  listen_ = health["http"]["listen"].get<std::string>();
  token_ = read_text(h.home() + "/token");
  // A browser session, as the dashboard's page opens one: its cookie is what cookie() sends.
  auto opened = tcp_request("POST", url("/v1/session"), page_post(), "");
  std::string set = opened.header("set-cookie");
  std::string prefix = "gpuq_session_" + port() + "=";
  if (opened.status == 204 && set.starts_with(prefix)) session_cookie_ = set.substr(0, set.find(';'));
}

}  // namespace gpuq::testing
