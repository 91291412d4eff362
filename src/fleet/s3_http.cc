// SPDX-License-Identifier: Apache-2.0
#include "fleet/s3_http.h"

#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include <cstring>

#include "base/libcurl.h"
#include "fleet/s3_xml.h"

namespace gpuq::fleet {
namespace {

// Where an answer's body goes: S3Answer::body, or a range of a file for a 2xx answer to a
// request with download_to.
struct BodySink {
  S3Answer* answer;
  const std::optional<FileRange>* download_to;
  const CurlApi* lib;
  CURL* curl;
};

// An error answer's XML is kept whole up to this size; a larger one is cut (it is only read
// for its code and message).
constexpr size_t kMostErrorBody = 64 << 10;

size_t take_body(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<BodySink*>(user);
  const size_t bytes = size * count;
  long status = 0;
  sink->lib->easy_getinfo(sink->curl, CURLINFO_RESPONSE_CODE, &status);
  if (!sink->download_to->has_value() || status < 200 || status > 299) {
    if (sink->answer->body.size() < kMostErrorBody || !sink->download_to->has_value()) {
      sink->answer->body.append(data, bytes);
    }
    return bytes;
  }
  const FileRange& range = **sink->download_to;
  S3Answer& answer = *sink->answer;
  if (answer.body_written + static_cast<int64_t>(bytes) > range.length) return 0;  // too much: fail
  size_t done = 0;
  while (done < bytes) {
    const ssize_t wrote = ::pwrite(range.fd, data + done, bytes - done,
                                   range.offset + answer.body_written + static_cast<int64_t>(done));
    if (wrote <= 0) return 0;  // libcurl then fails the request with CURLE_WRITE_ERROR
    done += static_cast<size_t>(wrote);
  }
  answer.body_written += static_cast<int64_t>(bytes);
  return bytes;
}

// A streamed PUT's body, read from its file range as libcurl asks for it.
struct BodySource {
  FileRange range;
  int64_t sent = 0;
  int error = 0;  // errno of a failed read
};

size_t give_body(char* buffer, size_t size, size_t count, void* user) {
  auto* source = static_cast<BodySource*>(user);
  const int64_t left = source->range.length - source->sent;
  if (left <= 0) return 0;
  const size_t want = static_cast<size_t>(std::min<int64_t>(left, static_cast<int64_t>(size * count)));
  const ssize_t got = ::pread(source->range.fd, buffer, want, source->range.offset + source->sent);
  if (got < 0) {
    source->error = errno;
    return CURL_READFUNC_ABORT;
  }
  if (got == 0) {  // the file shrank under us: the store must not get a short body
    source->error = EIO;
    return CURL_READFUNC_ABORT;
  }
  source->sent += got;
  return static_cast<size_t>(got);
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
    answer->content_length = -1;
    answer->metadata.clear();
    return line.size();
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return line.size();
  const std::string_view name = line.substr(0, colon);
  const std::string value(trim(line.substr(colon + 1)));
  if (header_is(name, "ETag")) answer->etag = unquote_etag(value);
  if (header_is(name, "Date")) answer->date_ms = parse_http_date_ms(value);
  if (header_is(name, "Last-Modified")) answer->last_modified_ms = parse_http_date_ms(value);
  if (header_is(name, "Content-Length")) answer->content_length = std::strtoll(value.c_str(), nullptr, 10);
  constexpr std::string_view kMeta = "x-amz-meta-";
  if (name.size() > kMeta.size() && ::strncasecmp(name.data(), kMeta.data(), kMeta.size()) == 0) {
    std::string key(name.substr(kMeta.size()));
    for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    answer->metadata[key] = value;
  }
  return line.size();
}

// libcurl's progress callback: non-zero ends the transfer (CURLE_ABORTED_BY_CALLBACK).
int check_abort(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<std::atomic<bool>*>(user)->load() ? 1 : 0;
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
      timeout_ms_(options.timeout_ms),
      abort_(options.abort) {}

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
  const std::string_view method = request.method;
  if (method == "PUT") lines.push_back("Content-Type: application/octet-stream");
  // Not libcurl's default for a POST (a form), which a server may parse the body away as.
  if (method == "POST") lines.push_back("Content-Type: application/xml");

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
  if (abort_) {
    lib_->easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    lib_->easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, check_abort);
    lib_->easy_setopt(curl, CURLOPT_XFERINFODATA, abort_.get());
  }
  BodySink sink{&answer, &request.download_to, lib_, curl};
  lib_->easy_setopt(curl, CURLOPT_WRITEFUNCTION, take_body);
  lib_->easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  lib_->easy_setopt(curl, CURLOPT_HEADERFUNCTION, read_header);
  lib_->easy_setopt(curl, CURLOPT_HEADERDATA, &answer);
  BodySource source;
  if (method == "PUT" && request.upload_from) {
    source.range = *request.upload_from;
    lib_->easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    lib_->easy_setopt(curl, CURLOPT_READFUNCTION, give_body);
    lib_->easy_setopt(curl, CURLOPT_READDATA, &source);
    lib_->easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(source.range.length));
    // libcurl asks for 100 Continue before a large body and would wait a second for it on
    // every part. (An empty "Expect:" header would turn it off too, but libcurl's signer signs
    // that header, which is then not sent.)
    lib_->easy_setopt(curl, CURLOPT_EXPECT_100_TIMEOUT_MS, 0L);
  } else if (method == "PUT" || method == "POST") {
    lib_->easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method);
    // Never NULL: libcurl would read the body from stdin.
    lib_->easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.empty() ? "" : request.body.data());
    lib_->easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
  } else if (method == "HEAD") {
    lib_->easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (method != "GET") {
    lib_->easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method);
  }

  const CURLcode code = lib_->easy_perform(curl);
  lib_->slist_free_all(headers);
  if (code != CURLE_OK) {
    answer.transport_error = *detail != '\0' ? detail : lib_->easy_strerror(code);
    if (code == CURLE_ABORTED_BY_CALLBACK) {
      answer.transport_error = "stopped: the daemon is stopping";
      answer.transient = false;
      return answer;
    }
    if (source.error != 0) {
      answer.transport_error = std::string("reading the file to send: ") + std::strerror(source.error);
      answer.transient = false;
      return answer;
    }
    answer.transient = transient(code);
    answer.maybe_applied = maybe_applied(code);
    return answer;
  }
  lib_->easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &answer.status);
  return answer;
}

}  // namespace gpuq::fleet
