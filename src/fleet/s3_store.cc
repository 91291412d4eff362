// SPDX-License-Identifier: Apache-2.0
#include "fleet/s3_store.h"

#include <fmt/format.h>

#include "fleet/s3_call.h"
#include "fleet/s3_http.h"
#include "fleet/s3_transfer.h"
#include "fleet/s3_xml.h"

namespace gpuq::fleet {
namespace {

class S3Store final : public ObjectStore {
 public:
  S3Store(std::string bucket, std::string prefix, StoreOptions options,
          std::unique_ptr<S3Http> http)
      : bucket_(std::move(bucket)),
        prefix_(std::move(prefix)),
        options_(std::move(options)),
        http_(std::move(http)) {
    std::string endpoint = options_.endpoint;
    if (endpoint.empty()) {
      endpoint = "https://s3." + (options_.region.empty() ? "us-east-1" : options_.region) +
                 ".amazonaws.com";
    }
    while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
    const size_t scheme_end = endpoint.find("://");
    if (options_.path_style || scheme_end == std::string::npos) {
      bucket_url_ = endpoint + "/" + bucket_;
      list_url_ = bucket_url_ + "?";
    } else {
      bucket_url_ =
          endpoint.substr(0, scheme_end + 3) + bucket_ + "." + endpoint.substr(scheme_end + 3);
      list_url_ = bucket_url_ + "/?";
    }
  }

  std::string describe() const override {
    return "s3://" + bucket_ + (prefix_.empty() ? "" : "/" + prefix_);
  }

  Result<Object> get(const std::string& key, const std::string& if_none_match) override {
    if (auto st = check_key(key); !st) return tl::unexpected(st.error());
    S3Request request{"GET", object_url(key), {}, {}};
    if (!if_none_match.empty())
      request.headers.push_back("If-None-Match: \"" + if_none_match + "\"");
    const S3Outcome outcome = call(request);
    const S3Answer& answer = outcome.answer;
    if (answer.status != 200 && answer.status != 304)
      return tl::unexpected(failure("GET", key, outcome));
    Object object;
    object.not_modified = answer.status == 304;
    object.etag = answer.etag.empty() && object.not_modified ? if_none_match : answer.etag;
    if (!object.not_modified) object.body = answer.body;
    object.modified_ms = answer.last_modified_ms;
    object.store_now_ms = answer.date_ms;
    return object;
  }

  Result<std::string> put(const std::string& key, std::string_view body) override {
    return write("PUT", key, body, "");
  }

  Result<std::string> create(const std::string& key, std::string_view body) override {
    return write("PUT (create)", key, body, "If-None-Match: *");
  }

  Result<std::string> replace(const std::string& key, std::string_view body,
                              const std::string& etag) override {
    return write("PUT (replace)", key, body, "If-Match: \"" + etag + "\"");
  }

  Status remove(const std::string& key) override {
    if (auto st = check_key(key); !st) return st;
    const S3Outcome outcome = call({"DELETE", object_url(key), {}, {}});
    const long status = outcome.answer.status;
    if (status == 200 || status == 204) return ok();
    // S3 answers 204 for a missing key; some compatible stores answer 404 NoSuchKey.
    Error error = failure("DELETE", key, outcome);
    if (error.code == Code::kNotFound) return ok();
    return tl::unexpected(std::move(error));
  }

  Result<ObjectInfo> put_file(const std::string& key, const std::string& path) override {
    if (auto st = check_key(key); !st) return tl::unexpected(st.error());
    return s3_put_file(*http_, options_, {describe(), key, object_url(key)}, path);
  }

  Result<ObjectInfo> get_file(const std::string& key, const std::string& target) override {
    if (auto st = check_key(key); !st) return tl::unexpected(st.error());
    return s3_get_file(*http_, options_, {describe(), key, object_url(key)}, target);
  }

  Result<Listing> list(const std::string& prefix) override {
    if (auto st = check_list_prefix(prefix); !st) return tl::unexpected(st.error());
    const std::string own = prefix_.empty() ? "" : prefix_ + "/";
    const std::string wanted = own + prefix;
    Listing listing;
    std::string token;
    for (int page_number = 1;; ++page_number) {
      // libcurl signs the query as given: names in order, values encoded.
      std::string query;
      if (!token.empty()) query += "continuation-token=" + http_->encode(token) + "&";
      query += "list-type=2";
      if (!wanted.empty()) query += "&prefix=" + http_->encode(wanted);
      const S3Outcome outcome = call({"GET", list_url_ + query, {}, {}});
      const std::string what = fmt::format("\"{}\" (page {})", prefix, page_number);
      if (outcome.answer.status != 200) return tl::unexpected(failure("LIST", what, outcome));
      if (page_number == 1) listing.store_now_ms = outcome.answer.date_ms;
      auto page = parse_list_page(outcome.answer.body);
      if (!page) {
        return fail(page.error().code,
                    fmt::format("{}: LIST {}: {}", describe(), what, page.error().message));
      }
      for (ObjectInfo& info : page->objects) {
        if (info.key.compare(0, own.size(), own) != 0) continue;
        info.key.erase(0, own.size());
        listing.objects.push_back(std::move(info));
      }
      if (!page->truncated) return listing;
      token = std::move(page->next_token);
    }
  }

 private:
  std::string object_url(const std::string& key) const {
    return bucket_url_ + "/" + (prefix_.empty() ? "" : prefix_ + "/") + key;
  }

  S3Outcome call(const S3Request& request) { return call_with_retries(*http_, request, options_); }

  Error failure(std::string_view op, std::string_view key, const S3Outcome& outcome) const {
    return s3_failure(describe(), op, key, outcome);
  }

  Result<std::string> write(std::string_view op, const std::string& key, std::string_view body,
                            const std::string& condition) {
    if (auto st = check_key(key); !st) return tl::unexpected(st.error());
    S3Request request{"PUT", object_url(key), {}, body};
    if (!condition.empty()) request.headers.push_back(condition);
    const S3Outcome outcome = call(request);
    if (outcome.answer.status == 200) {
      if (outcome.answer.etag.empty()) {
        return fail(Code::kIoError, fmt::format("{}: {} {}: the store answered without an ETag",
                                                describe(), op, key));
      }
      return outcome.answer.etag;
    }
    if (outcome.answer.status == 412 && outcome.ambiguous) {
      // An earlier attempt may have been the one that wrote: the object says.
      auto current = get(key, "");
      if (current && current->body == body) return current->etag;
    }
    return tl::unexpected(failure(op, key, outcome));
  }

  std::string bucket_;
  std::string prefix_;
  StoreOptions options_;
  std::unique_ptr<S3Http> http_;
  std::string bucket_url_;  // https://ENDPOINT/BUCKET or https://BUCKET.ENDPOINT
  std::string list_url_;    // bucket_url_ up to the query
};

}  // namespace

Result<std::unique_ptr<ObjectStore>> open_s3_store(const std::string& bucket,
                                                   const std::string& prefix,
                                                   const StoreOptions& options) {
  auto http = S3Http::open(options);
  if (!http) return tl::unexpected(http.error());
  return std::unique_ptr<ObjectStore>(
      std::make_unique<S3Store>(bucket, prefix, options, std::move(*http)));
}

}  // namespace gpuq::fleet
