// SPDX-License-Identifier: Apache-2.0
#include "unix_http.h"

#include <curl/curl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

namespace gpuq::testing {
namespace {

size_t append(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

struct Stream {
  std::string pending;
  SseResult* result = nullptr;
  const std::function<bool(const std::vector<SseFrame>&)>* until = nullptr;
};

// Takes every complete frame (text up to a blank line) out of `s.pending`; returns false to
// stop once `until` holds.
bool take_frames(Stream& s) {
  size_t end;
  while ((end = s.pending.find("\n\n")) != std::string::npos) {
    std::string block = s.pending.substr(0, end + 1);
    s.pending.erase(0, end + 2);
    SseFrame frame;
    bool has_field = false;
    size_t start = 0;
    while (start < block.size()) {
      size_t nl = block.find('\n', start);
      std::string line = block.substr(start, nl - start);
      start = nl + 1;
      if (line.empty()) continue;
      if (line[0] == ':') {
        ++s.result->comments;
        continue;
      }
      size_t colon = line.find(':');
      std::string field = line.substr(0, colon);
      std::string value = colon == std::string::npos ? "" : line.substr(colon + 1);
      if (!value.empty() && value[0] == ' ') value.erase(0, 1);
      has_field = true;
      if (field == "id") frame.id = std::stoll(value);
      if (field == "event") frame.event = value;
      if (field == "data") frame.data += frame.data.empty() ? value : "\n" + value;
    }
    if (!has_field) continue;
    s.result->frames.push_back(std::move(frame));
    if ((*s.until)(s.result->frames)) return false;
  }
  return true;
}

size_t on_stream(char* data, size_t size, size_t count, void* user) {
  auto* s = static_cast<Stream*>(user);
  s->pending.append(data, size * count);
  return take_frames(*s) ? size * count : 0;  // 0 makes curl drop the connection
}

CURL* open(const std::string& socket, const std::string& path, curl_slist* headers, int timeout_ms) {
  static const bool initialised = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;  // once, thread-safe
  (void)initialised;
  CURL* curl = curl_easy_init();
  curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, socket.c_str());
  curl_easy_setopt(curl, CURLOPT_URL, ("http://gpuq" + path).c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  return curl;
}

curl_slist* header_list(const std::vector<std::string>& headers) {
  curl_slist* list = nullptr;
  for (const auto& h : headers) list = curl_slist_append(list, h.c_str());
  return list;
}

void read_status(CURL* curl, long& status, std::string& content_type) {
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  char* type = nullptr;
  curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &type);
  if (type) content_type = type;
}

}  // namespace

HttpAnswer unix_get(const std::string& socket, const std::string& path,
                    const std::vector<std::string>& headers, int timeout_ms) {
  return unix_request(socket, "GET", path, "", headers, timeout_ms);
}

HttpAnswer unix_post(const std::string& socket, const std::string& path, const std::string& body,
                     int timeout_ms) {
  return unix_request(socket, "POST", path, body, {}, timeout_ms);
}

SseResult unix_sse(const std::string& socket, const std::string& path,
                   const std::vector<std::string>& headers,
                   const std::function<bool(const std::vector<SseFrame>&)>& until, int timeout_ms) {
  SseResult result;
  Stream stream{"", &result, &until};
  curl_slist* list = header_list(headers);
  CURL* curl = open(socket, path, list, timeout_ms);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_stream);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &stream);
  result.curl_code = curl_easy_perform(curl);
  read_status(curl, result.status, result.content_type);
  curl_easy_cleanup(curl);
  curl_slist_free_all(list);
  return result;
}

HttpAnswer unix_request(const std::string& socket, const std::string& method, const std::string& path,
                        const std::string& body, const std::vector<std::string>& headers,
                        int timeout_ms) {
  HttpAnswer answer;
  std::vector<std::string> all = headers;
  if (!body.empty()) all.push_back("Content-Type: application/json");
  curl_slist* list = header_list(all);
  CURL* curl = open(socket, path, list, timeout_ms);
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (method == "POST") {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer.body);
  answer.curl_code = curl_easy_perform(curl);
  read_status(curl, answer.status, answer.content_type);
  curl_header* version = nullptr;
  if (curl_easy_header(curl, "Gpuq-Api", 0, CURLH_HEADER, -1, &version) == CURLHE_OK) {
    answer.api_version = version->value;
  }
  curl_easy_cleanup(curl);
  curl_slist_free_all(list);
  return answer;
}

int unix_connect(const std::string& socket) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, socket.c_str(), sizeof(address.sun_path) - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool wait_closed_by_peer(int fd, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  char buffer[4096];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return true;
  }
}

}  // namespace gpuq::testing
