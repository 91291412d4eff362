// SPDX-License-Identifier: Apache-2.0
#include "fleet/s3_transfer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "fleet/partial_file.h"
#include "fleet/s3_call.h"
#include "fleet/s3_xml.h"

namespace gpuq::fleet {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// A file opened for reading, closed on every path out.
struct ReadFile {
  int fd = -1;
  struct stat facts {};
  ~ReadFile() {
    if (fd >= 0) ::close(fd);
  }
};

// Whether the file changed since `before` (a job rewrote it in place while it was read).
bool changed(const ReadFile& file) {
  struct stat now {};
  if (::fstat(file.fd, &now) != 0) return true;
  return now.st_size != file.facts.st_size || now.st_mtim.tv_sec != file.facts.st_mtim.tv_sec ||
         now.st_mtim.tv_nsec != file.facts.st_mtim.tv_nsec;
}

// Runs `work(i)` for i in [0, count) on up to `lanes` threads; stops handing out work after the
// first failure, and returns it.
Status in_parallel(int64_t count, int lanes, const std::function<Status(int64_t, S3Http&)>& work,
                   const StoreOptions& options) {
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::optional<Error> first;
  auto lane = [&] {
    auto http = S3Http::open(options);
    if (!http) {
      std::lock_guard lock(mutex);
      if (!first) first = http.error();
      failed = true;
      return;
    }
    while (!failed) {
      const int64_t i = next++;
      if (i >= count) return;
      if (auto done = work(i, **http); !done) {
        std::lock_guard lock(mutex);
        if (!first) first = done.error();
        failed = true;
      }
    }
  };
  const int threads = static_cast<int>(std::clamp<int64_t>(count, 1, std::max(lanes, 1)));
  std::vector<std::thread> workers;
  for (int i = 1; i < threads; ++i) workers.emplace_back(lane);
  lane();
  for (auto& worker : workers) worker.join();
  if (first) return tl::unexpected(*first);
  return ok();
}

struct PartPlan {
  int64_t size = 0;
  int64_t count = 0;
  int64_t offset(int64_t i) const { return i * size; }
  int64_t length(int64_t i, int64_t total) const { return std::min(size, total - offset(i)); }
};

// One read of the whole file: its MD5 and each part's, in bounded memory.
struct Digests {
  Md5Digest whole{};
  std::vector<Md5Digest> parts;
};

Result<Digests> digest_file(const ReadFile& file, const PartPlan& plan, int64_t total,
                            const std::string& path) {
  auto whole = Md5::start();
  if (!whole) return tl::unexpected(whole.error());
  Digests out;
  std::vector<char> buffer(kMiB);
  for (int64_t i = 0; i < plan.count; ++i) {
    auto part = Md5::start();
    if (!part) return tl::unexpected(part.error());
    const int64_t end = plan.offset(i) + plan.length(i, total);
    for (int64_t at = plan.offset(i); at < end;) {
      const size_t want = static_cast<size_t>(std::min<int64_t>(end - at, kMiB));
      const ssize_t got = ::pread(file.fd, buffer.data(), want, at);
      if (got < 0) return errno_error("read " + path);
      if (got == 0) return fail(Code::kUnavailable, fmt::format("{} shrank while it was read", path));
      whole->update(buffer.data(), static_cast<size_t>(got));
      part->update(buffer.data(), static_cast<size_t>(got));
      at += got;
    }
    out.parts.push_back(part->digest());
  }
  out.whole = whole->digest();
  return out;
}

class Upload {
 public:
  Upload(S3Http& http, const StoreOptions& options, const S3Target& target, const std::string& path)
      : http_(http), options_(options), target_(target), path_(path) {}

  Result<ObjectInfo> run() {
    file_.fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (file_.fd < 0 || ::fstat(file_.fd, &file_.facts) != 0) {
      return fail(errno == ENOENT ? Code::kNotFound : Code::kIoError,
                  fmt::format("cannot read {}: {}", path_, std::strerror(errno)));
    }
    const int64_t size = file_.facts.st_size;
    if (size > kMaxObjectSize) {
      return fail(Code::kInvalidArgument,
                  fmt::format("{} has {} bytes, more than S3's largest object (5 TiB)", path_, size));
    }
    const bool multipart = size > options_.part_size;
    plan_.size = multipart ? part_size_for(size, options_.part_size) : std::max<int64_t>(size, 1);
    plan_.count = size == 0 ? 1 : (size + plan_.size - 1) / plan_.size;
    auto digests = digest_file(file_, plan_, size, path_);
    if (!digests) return tl::unexpected(digests.error());
    digests_ = std::move(*digests);
    auto etag = multipart ? multipart_upload(size) : single_put(size);
    if (!etag) return tl::unexpected(etag.error());
    return ObjectInfo{target_.key, *etag, size, 0};
  }

 private:
  std::vector<std::string> object_headers() const {
    return {fmt::format("x-amz-meta-{}: {}", kMetaMd5, to_hex(digests_.whole)),
            fmt::format("x-amz-meta-{}: {}", kMetaPartSize, plan_.size)};
  }

  Status unchanged() const {
    if (!changed(file_)) return ok();
    return fail(Code::kUnavailable,
                fmt::format("{} changed while it was pushed; it is pushed again at the next sync", path_));
  }

  Result<std::string> single_put(int64_t size) {
    S3Request request{"PUT", target_.url, object_headers(), {}};
    request.headers.push_back("Content-MD5: " + to_base64(digests_.whole));
    request.upload_from = FileRange{file_.fd, 0, size};
    const S3Outcome outcome = call_with_retries(http_, request, options_);
    if (outcome.answer.status != 200) return tl::unexpected(s3_failure(target_.store, "PUT", target_.key, outcome));
    if (auto same = unchanged(); !same) return tl::unexpected(same.error());
    return outcome.answer.etag;
  }

  Result<std::string> multipart_upload(int64_t size) {
    S3Request create{"POST", target_.url + "?uploads=", object_headers(), {}};
    const S3Outcome created = call_with_retries(http_, create, options_);
    if (created.answer.status != 200) {
      return tl::unexpected(s3_failure(target_.store, "CreateMultipartUpload", target_.key, created));
    }
    auto id = parse_upload_id(created.answer.body);
    if (!id) return tl::unexpected(id.error());
    upload_url_ = target_.url + "?uploadId=" + http_.encode(*id);
    std::vector<UploadedPart> parts(static_cast<size_t>(plan_.count));
    auto sent = in_parallel(
        plan_.count, options_.transfers,
        [&](int64_t i, S3Http& http) -> Status {
          // Names in order for the signature: partNumber before uploadId.
          S3Request part{"PUT",
                         fmt::format("{}?partNumber={}&uploadId={}", target_.url, i + 1, http.encode(*id)),
                         {"Content-MD5: " + to_base64(digests_.parts[static_cast<size_t>(i)])},
                         {}};
          part.upload_from = FileRange{file_.fd, plan_.offset(i), plan_.length(i, size)};
          const S3Outcome outcome = call_with_retries(http, part, options_);
          if (outcome.answer.status != 200 || outcome.answer.etag.empty()) {
            return tl::unexpected(
                s3_failure(target_.store, fmt::format("UploadPart {}/{}", i + 1, plan_.count), target_.key, outcome));
          }
          parts[static_cast<size_t>(i)] = {static_cast<int>(i + 1), outcome.answer.etag};
          return ok();
        },
        options_);
    if (sent) sent = unchanged();
    if (!sent) {
      abort();
      return tl::unexpected(sent.error());
    }
    auto etag = complete(parts, size);
    if (!etag) abort();
    return etag;
  }

  Result<std::string> complete(const std::vector<UploadedPart>& parts, int64_t size) {
    const std::string body = complete_upload_body(parts);
    S3Request request{"POST", upload_url_, {}, body};
    for (int round = 0;; ++round) {
      const S3Outcome outcome = call_with_retries(http_, request, options_);
      if (outcome.answer.status == 200) {
        auto etag = parse_complete_upload(outcome.answer.body);
        // 200 with an <Error> inside: S3 failed after it had answered; a transient one is tried again.
        if (!etag && etag.error().code == Code::kUnavailable && round < options_.retries) continue;
        if (!etag) return fail(etag.error().code, fmt::format("{}: {}: {}", target_.store, target_.key, etag.error().message));
        return etag;
      }
      // An earlier attempt may have completed it (its answer lost): the object then says so.
      if (outcome.answer.status == 404 && outcome.ambiguous) {
        S3Request head{"HEAD", target_.url, {}, {}};
        const S3Outcome seen = call_with_retries(http_, head, options_);
        auto md5 = seen.answer.metadata.find(kMetaMd5);
        if (seen.answer.status == 200 && seen.answer.content_length == size &&
            md5 != seen.answer.metadata.end() && md5->second == to_hex(digests_.whole)) {
          return seen.answer.etag;
        }
      }
      return tl::unexpected(s3_failure(target_.store, "CompleteMultipartUpload", target_.key, outcome));
    }
  }

  // Best effort: a failed abort leaves the parts to the bucket's lifecycle rule.
  void abort() { (void)call_with_retries(http_, S3Request{"DELETE", upload_url_, {}, {}}, options_); }

  S3Http& http_;
  const StoreOptions& options_;
  const S3Target& target_;
  const std::string& path_;
  ReadFile file_;
  PartPlan plan_;
  Digests digests_;
  std::string upload_url_;
};

}  // namespace

int64_t part_size_for(int64_t size, int64_t wanted) {
  int64_t part = std::clamp(wanted, kMinPartSize, kMaxPartSize);
  if (size > part * kMaxParts) {
    const int64_t least = (size + kMaxParts - 1) / kMaxParts;
    part = std::min(kMaxPartSize, (least + kMiB - 1) / kMiB * kMiB);
  }
  return part;
}

Result<ObjectInfo> s3_put_file(S3Http& http, const StoreOptions& options, const S3Target& target,
                               const std::string& path) {
  return Upload(http, options, target, path).run();
}

Result<ObjectInfo> s3_get_file(S3Http& http, const StoreOptions& options, const S3Target& target,
                               const std::string& local) {
  const S3Outcome head = call_with_retries(http, S3Request{"HEAD", target.url, {}, {}}, options);
  if (head.answer.status != 200) return tl::unexpected(s3_failure(target.store, "HEAD", target.key, head));
  const int64_t size = head.answer.content_length;
  const std::string etag = head.answer.etag;
  if (size < 0 || etag.empty()) {
    return fail(Code::kIoError, fmt::format("{}: HEAD {}: the store gave no size or no ETag", target.store, target.key));
  }
  auto partial = PartialFile::open(local, size);
  if (!partial) return tl::unexpected(partial.error());
  const int64_t range = std::clamp(options.part_size, kMinPartSize, kMaxPartSize);
  const int64_t count = size == 0 ? 0 : (size + range - 1) / range;
  auto got = in_parallel(
      count, options.transfers,
      [&](int64_t i, S3Http& lane) -> Status {
        const int64_t from = i * range;
        const int64_t length = std::min(range, size - from);
        S3Request request{"GET", target.url,
                          {fmt::format("Range: bytes={}-{}", from, from + length - 1), "If-Match: \"" + etag + "\""},
                          {}};
        request.download_to = FileRange{partial->fd(), from, length};
        const S3Outcome outcome = call_with_retries(lane, request, options);
        const std::string what = fmt::format("GET bytes {}-{}", from, from + length - 1);
        if (outcome.answer.status == 412) {
          return fail(Code::kConflict, fmt::format("{}: {} {}: the object was replaced while it was pulled",
                                                   target.store, what, target.key));
        }
        if (outcome.answer.status != 206 && !(outcome.answer.status == 200 && count == 1)) {
          return tl::unexpected(s3_failure(target.store, what, target.key, outcome));
        }
        if (outcome.answer.body_written != length) {
          return fail(Code::kUnavailable, fmt::format("{}: {} {}: {} bytes came instead of {}", target.store, what,
                                                      target.key, outcome.answer.body_written, length));
        }
        return ok();
      },
      options);
  if (!got) return tl::unexpected(got.error());
  if (auto md5 = head.answer.metadata.find(kMetaMd5); md5 != head.answer.metadata.end()) {
    auto digest = md5_of_range(partial->fd(), 0, size, partial->path());
    if (!digest) return tl::unexpected(digest.error());
    if (to_hex(*digest) != md5->second) {
      return fail(Code::kUnavailable, fmt::format("{}: {}: the bytes pulled have MD5 {}, the object recorded {}",
                                                  target.store, target.key, to_hex(*digest), md5->second));
    }
  }
  if (auto done = partial->commit(); !done) return tl::unexpected(done.error());
  return ObjectInfo{target.key, etag, size, head.answer.last_modified_ms};
}

}  // namespace gpuq::fleet
