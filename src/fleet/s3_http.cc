#include "fleet/s3_http.h"

#include <strings.h>

#include <cstring>

#include "base/libcurl.h"
#include "fleet/s3_xml.h"

namespace gpuq::fleet {
namespace {

size_t append_body(char* data, size_t size, size_t count, void* user) {
  static_cast<S3Answer*>(user)->body.append(data, size * count);
  return size * count;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r' ||
                           text.back() == '\n')) {
    text.remove_suffix(1);
  }
  return text;
}

bool header_is(std::string_view name, const char* wanted) {
  return name.size() == std::strlen(wanted) && ::strncasecmp(name.data(), wanted, name.size()) == 0;
}

size_t read_header(char* data, size_t size, size_t count, void* user) {
  auto* answer = static_cast<S3Answer*>(user);
  const std::string_view line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) {  // a new answer (after 100 Continue): forget the last one
    answer->etag.clear();
    answer->date_ms = answer->last_modified_ms = 0;
    return line.size();
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return line.size();
  const std::string_view name = line.substr(0, colon);
  const std::string value(trim(line.substr(colon + 1)));
  if (header_is(name, "ETag")) answer->etag = unquote_etag(value);
  if (header_is(name, "Date")) answer->date_ms = parse_http_date_ms(value);
  if (header_is(name, "Last-Modified")) answer->last_modified_ms = parse_http_date_ms(value);
  return line.size();
}

// Errors that another attempt cannot mend: the URL or the build is wrong, or TLS refused the
// server. Everything else (refused or reset connections, timeouts) is worth another try.
bool transient(CURLcode code) {
  switch (code) {
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_NOT_BUILT_IN:
    case CURLE_BAD_FUNCTION_ARGUMENT:
    case CURLE_UNKNOWN_OPTION:
    case CURLE_OUT_OF_MEMORY:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
      return false;
    default:
      return true;
  }
}

// Whether the request may have reached the store: not when no connection was made.
bool maybe_applied(CURLcode code) {
  return code != CURLE_COULDNT_RESOLVE_HOST && code != CURLE_COULDNT_RESOLVE_PROXY &&
         code != CURLE_COULDNT_CONNECT && transient(code);
}

}  // namespace

int64_t parse_http_date_ms(const std::string& text) {
  auto lib = curl_api();
  if (!lib) return 0;
  const time_t seconds = (*lib)->getdate(text.c_str(), nullptr);
  return seconds <= 0 ? 0 : static_cast<int64_t>(seconds) * 1000;
}

Result<std::unique_ptr<S3Http>> S3Http::open(const StoreOptions& options) {
  auto lib = curl_api();
  if (!lib) return tl::unexpected(lib.error());
  CURL* handle = (*lib)->easy_init();
  if (handle == nullptr) return fail(Code::kInternal, "libcurl could not create a handle");
  return std::unique_ptr<S3Http>(new S3Http(*lib, handle, options));
}

S3Http::S3Http(const CurlApi* lib, void* handle, const StoreOptions& options)
    : lib_(lib),
      handle_(handle),
      sigv4_("aws:amz:" + (options.region.empty() ? std::string("us-east-1") : options.region) +
             ":s3"),
      access_key_id_(options.access_key_id),
      secret_access_key_(options.secret_access_key),
      session_token_(options.session_token),
      timeout_ms_(options.timeout_ms) {}

S3Http::~S3Http() { lib_->easy_cleanup(static_cast<CURL*>(handle_)); }

std::string S3Http::encode(std::string_view value) {
  char* encoded =
      lib_->easy_escape(static_cast<CURL*>(handle_), value.data(), static_cast<int>(value.size()));
  std::string out = encoded == nullptr ? "" : encoded;
  lib_->free(encoded);
  return out;
}

S3Answer S3Http::send(const S3Request& request) {
  CURL* curl = static_cast<CURL*>(handle_);
  lib_->easy_reset(curl);  // keeps the connection cache, forgets the last request's options
  S3Answer answer;
  char detail[CURL_ERROR_SIZE] = {};
  curl_slist* headers = nullptr;
  // Signed by libcurl (it signs every header it is given): S3 wants the payload's hash, and
  // UNSIGNED-PAYLOAD lets the body travel without hashing it here.
  std::vector<std::string> lines = {"x-amz-content-sha256: UNSIGNED-PAYLOAD"};
  if (!session_token_.empty()) lines.push_back("x-amz-security-token: " + session_token_);
  if (std::string_view(request.method) == "PUT") {
    lines.push_back("Content-Type: application/octet-stream");
  }
  lines.insert(lines.end(), request.headers.begin(), request.headers.end());
  for (const std::string& line : lines) headers = lib_->slist_append(headers, line.c_str());

  lib_->easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  lib_->easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  lib_->easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms_));
  lib_->easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeout_ms_));
  lib_->easy_setopt(curl, CURLOPT_AWS_SIGV4, sigv4_.c_str());
  lib_->easy_setopt(curl, CURLOPT_USERNAME, access_key_id_.c_str());
  lib_->easy_setopt(curl, CURLOPT_PASSWORD, secret_access_key_.c_str());
  lib_->easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  lib_->easy_setopt(curl, CURLOPT_ERRORBUFFER, detail);
  lib_->easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_body);
  lib_->easy_setopt(curl, CURLOPT_WRITEDATA, &answer);
  lib_->easy_setopt(curl, CURLOPT_HEADERFUNCTION, read_header);
  lib_->easy_setopt(curl, CURLOPT_HEADERDATA, &answer);
  if (std::string_view(request.method) == "PUT") {
    lib_->easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "PUT");
    // Never NULL: libcurl would read the body from stdin.
    lib_->easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.empty() ? "" : request.body.data());
    lib_->easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
  } else if (std::string_view(request.method) != "GET") {
    lib_->easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method);
  }

  const CURLcode code = lib_->easy_perform(curl);
  lib_->slist_free_all(headers);
  if (code != CURLE_OK) {
    answer.transport_error = *detail != '\0' ? detail : lib_->easy_strerror(code);
    answer.transient = transient(code);
    answer.maybe_applied = maybe_applied(code);
    return answer;
  }
  lib_->easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &answer.status);
  return answer;
}

}  // namespace gpuq::fleet
