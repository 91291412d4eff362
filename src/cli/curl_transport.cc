// SPDX-License-Identifier: Apache-2.0
#include "cli/curl_transport.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>

#include "base/api_version.h"
#include "base/ascii.h"
#include "base/libcurl.h"

namespace gpuq::cli {
namespace {

size_t append_body(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

// Turns a failed transfer into the error categories of Transport::send.
Error transfer_error(const CurlApi& lib, CURLcode code, long os_errno, const char* detail,
                     const std::string& path, Millis timeout) {
  std::string what = *detail ? detail : lib.easy_strerror(code);
  if (code == CURLE_COULDNT_CONNECT) {
    if (os_errno == EACCES || os_errno == EPERM) {
      return {Code::kFailedPrecondition,
              fmt::format("permission denied connecting to {} (is the daemon run by another "
                          "user?)",
                          path)};
    }
    if (os_errno == ENOENT) return {Code::kUnavailable, "no socket at " + path};
    return {Code::kUnavailable, fmt::format("nothing is listening on {}", path)};
  }
  if (code == CURLE_OPERATION_TIMEDOUT) {
    return {Code::kIoError, fmt::format("the daemon did not answer within {} ({})",
                                        format_duration(timeout), what)};
  }
  return {Code::kIoError, fmt::format("talking to the daemon at {} failed: {}", path, what)};
}

}  // namespace

static Result<std::pair<const CurlApi*, void*>> new_handle() {
  auto lib = curl_api();
  if (!lib) return tl::unexpected(lib.error());
  CURL* handle = (*lib)->easy_init();
  if (handle == nullptr) return fail(Code::kInternal, "libcurl could not create a handle");
  return std::pair<const CurlApi*, void*>(*lib, handle);
}

Result<std::unique_ptr<Transport>> CurlTransport::create(std::string socket_path) {
  auto handle = new_handle();
  if (!handle) return tl::unexpected(handle.error());
  return std::unique_ptr<Transport>(new CurlTransport(handle->first, handle->second, std::move(socket_path), {}, ""));
}

Result<std::unique_ptr<Transport>> CurlTransport::create_tcp(DaemonUrl url, std::string token) {
  auto handle = new_handle();
  if (!handle) return tl::unexpected(handle.error());
  return std::unique_ptr<Transport>(new CurlTransport(handle->first, handle->second, "", std::move(url), std::move(token)));
}

CurlTransport::CurlTransport(const CurlApi* lib, void* handle, std::string socket_path, DaemonUrl url,
                             std::string token)
    : lib_(lib),
      handle_(handle), socket_path_(std::move(socket_path)), url_(std::move(url)), token_(std::move(token)) {}

CurlTransport::~CurlTransport() { lib_->easy_cleanup(static_cast<CURL*>(handle_)); }

Result<HttpResponse> CurlTransport::send(const HttpRequest& request) {
  bool tcp = !url_.base.empty();
  if (!tcp) {
    if (auto st = check_daemon_socket(socket_path_); !st) return tl::unexpected(st.error());
  }
  CURL* curl = static_cast<CURL*>(handle_);
  lib_->easy_reset(curl);  // keeps the connection cache, forgets the previous request's options

  HttpResponse response;
  char detail[CURL_ERROR_SIZE] = {0};
  std::string url = (tcp ? url_.base : std::string("http://gpuq")) + request.target;
  if (!tcp) lib_->easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, socket_path_.c_str());
  lib_->easy_setopt(curl, CURLOPT_URL, url.c_str());
  lib_->easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  lib_->easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(kConnectTimeout.count()));
  lib_->easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  lib_->easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_body);
  lib_->easy_setopt(curl, CURLOPT_WRITEDATA, &response.body);
  lib_->easy_setopt(curl, CURLOPT_ERRORBUFFER, detail);

  curl_slist* headers = nullptr;
  headers = lib_->slist_append(headers, "Accept: application/json");
  headers =
      lib_->slist_append(headers, fmt::format("{}: {}", kApiVersionHeader, kApiVersion).c_str());
  if (tcp) {
    // Host as the URL names it, so that Origin (below) is exactly http:// and Host.
    headers = lib_->slist_append(headers, ("Host: " + url_.authority).c_str());
    if (!token_.empty()) headers = lib_->slist_append(headers, ("Authorization: Bearer " + token_).c_str());
    if (request.method == Method::kPost) {
      headers = lib_->slist_append(headers, ("Origin: " + url_.base).c_str());
      headers = lib_->slist_append(headers, "X-Gpuq-Csrf: 1");
    }
  }
  if (request.method == Method::kPost) {
    headers = lib_->slist_append(headers, "Content-Type: application/json");
    headers = lib_->slist_append(headers, "Expect:");  // no 100-continue round trip
    lib_->easy_setopt(curl, CURLOPT_POST, 1L);
    lib_->easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(request.body.size()));
    lib_->easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
  }
  lib_->easy_setopt(curl, CURLOPT_HTTPHEADER, headers);

  CURLcode code = lib_->easy_perform(curl);
  lib_->slist_free_all(headers);
  if (code != CURLE_OK) {
    long os_errno = 0;
    lib_->easy_getinfo(curl, CURLINFO_OS_ERRNO, &os_errno);
    return tl::unexpected(transfer_error(*lib_, code, os_errno, detail, tcp ? url_.base : socket_path_, request.timeout));
  }
  lib_->easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  for (curl_header* h = lib_->easy_nextheader(curl, CURLH_HEADER, -1, nullptr); h != nullptr;
       h = lib_->easy_nextheader(curl, CURLH_HEADER, -1, h)) {
    response.headers[ascii_lower(h->name)] = h->value;
  }
  return response;
}

}  // namespace gpuq::cli
