// SPDX-License-Identifier: Apache-2.0
#include "fleet/object_store.h"

#include <fmt/format.h>

#include <cstdlib>
#include <initializer_list>
#include <random>

#include "base/random.h"
#include "fleet/dir_store.h"
#include "fleet/s3_store.h"

namespace gpuq::fleet {
namespace {

constexpr size_t kMaxKeyBytes = 900;
constexpr std::string_view kAlphabet = "A-Z a-z 0-9 . _ - /";

bool in_alphabet(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-' || c == '/';
}

Status refuse_key(std::string_view key, std::string_view why) {
  return fail(Code::kInvalidArgument,
              fmt::format("key \"{}\" is refused: {} (a key is 1..{} bytes of {}, with no empty, "
                          "\".\" or \"..\" segment and no '/' at either end)",
                          clip_for_message(key), why, kMaxKeyBytes, kAlphabet));
}

std::string without_trailing_slashes(std::string text) {
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  return text;
}

// The rules S3 gives for new bucket names (3..63 bytes of a-z 0-9 . -, a letter or digit at
// each end, no "..", not an IP address), so a typo is told here and not as a 400 later.
Status check_bucket(std::string_view bucket, const std::string& url) {
  auto refuse = [&](std::string_view why) {
    return fail(Code::kInvalidArgument,
                fmt::format("{}: bucket \"{}\" is not a name S3 accepts: {}", clip_for_message(url),
                            clip_for_message(bucket), why));
  };
  if (bucket.empty()) return refuse("it is empty (write s3://BUCKET/PREFIX)");
  if (bucket.size() < 3 || bucket.size() > 63) return refuse("it must be 3..63 bytes long");
  bool all_digits_and_dots = true;
  for (char c : bucket) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-')) {
      return refuse("it may hold only a-z, 0-9, '.' and '-'");
    }
    if (c != '.' && !(c >= '0' && c <= '9')) all_digits_and_dots = false;
  }
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(bucket.front()) || !alnum(bucket.back())) {
    return refuse("it must begin and end with a letter or a digit");
  }
  if (bucket.find("..") != std::string_view::npos) return refuse("it may not hold \"..\"");
  if (all_digits_and_dots) return refuse("it may not look like an IP address");
  return ok();
}

Result<StoreUrl> parse_s3_url(const std::string& url, std::string_view rest) {
  StoreUrl out;
  out.kind = StoreUrl::Kind::kS3;
  const size_t slash = rest.find('/');
  out.bucket = std::string(rest.substr(0, slash));
  if (auto st = check_bucket(out.bucket, url); !st) return tl::unexpected(st.error());
  std::string prefix = slash == std::string_view::npos ? "" : std::string(rest.substr(slash + 1));
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  if (!prefix.empty()) {
    if (auto st = check_key(prefix); !st) {
      return fail(Code::kInvalidArgument, fmt::format("{}: the prefix is refused: {}",
                                                      clip_for_message(url), st.error().message));
    }
  }
  out.prefix = std::move(prefix);
  return out;
}

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

void fill(std::string& field, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (!field.empty()) return;
    field = env(name);
  }
}

}  // namespace

Status check_key(std::string_view key) {
  if (key.empty()) return refuse_key(key, "it is empty");
  if (key.size() > kMaxKeyBytes) return refuse_key(key, "it is too long");
  for (char c : key) {
    if (!in_alphabet(c)) {
      return refuse_key(key, c == '\0' ? "it holds a NUL byte"
                                       : fmt::format("it holds '{}'", clip_for_message({&c, 1})));
    }
  }
  size_t start = 0;
  while (true) {
    const size_t end = key.find('/', start);
    const std::string_view segment =
        key.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (segment.empty()) return refuse_key(key, "it has an empty segment or a '/' at one end");
    if (segment == "." || segment == "..") {
      return refuse_key(key, fmt::format("it has a \"{}\" segment", segment));
    }
    if (end == std::string_view::npos) return ok();
    start = end + 1;
  }
}

Status check_list_prefix(std::string_view prefix) {
  if (prefix.size() > kMaxKeyBytes) {
    return fail(Code::kInvalidArgument,
                fmt::format("list prefix \"{}\" is refused: it is longer than {} bytes",
                            clip_for_message(prefix), kMaxKeyBytes));
  }
  for (char c : prefix) {
    if (!in_alphabet(c)) {
      return fail(Code::kInvalidArgument,
                  fmt::format("list prefix \"{}\" is refused: it may hold only {}",
                              clip_for_message(prefix), kAlphabet));
    }
  }
  if (!prefix.empty() && prefix.front() == '/') {
    return fail(Code::kInvalidArgument,
                fmt::format("list prefix \"{}\" is refused: keys never begin with '/'",
                            clip_for_message(prefix)));
  }
  return ok();
}

Result<StoreUrl> parse_store_url(const std::string& url) {
  constexpr std::string_view kS3 = "s3://";
  constexpr std::string_view kDir = "dir://";
  const std::string_view text = url;
  if (text.substr(0, kS3.size()) == kS3) return parse_s3_url(url, text.substr(kS3.size()));
  if (text.substr(0, kDir.size()) == kDir) {
    std::string path(text.substr(kDir.size()));
    if (path.empty() || path.front() != '/') {
      return fail(Code::kInvalidArgument,
                  fmt::format("{}: a directory store is named by an absolute path: dir:///PATH "
                              "(three slashes)",
                              clip_for_message(url)));
    }
    StoreUrl out;
    out.kind = StoreUrl::Kind::kDir;
    out.path = without_trailing_slashes(std::move(path));
    return out;
  }
  return fail(
      Code::kInvalidArgument,
      fmt::format("store \"{}\" is not understood: write s3://BUCKET/PREFIX for a bucket or "
                  "dir:///PATH for a shared directory",
                  clip_for_message(url)));
}

StoreOptions with_aws_environment(StoreOptions options) {
  fill(options.access_key_id, {"AWS_ACCESS_KEY_ID"});
  fill(options.secret_access_key, {"AWS_SECRET_ACCESS_KEY"});
  fill(options.session_token, {"AWS_SESSION_TOKEN"});
  fill(options.region, {"AWS_REGION", "AWS_DEFAULT_REGION"});
  fill(options.endpoint, {"AWS_ENDPOINT_URL"});
  return options;
}

Result<std::unique_ptr<ObjectStore>> open_store(const std::string& url,
                                                const StoreOptions& options) {
  auto parsed = parse_store_url(url);
  if (!parsed) return tl::unexpected(parsed.error());
  if (parsed->kind == StoreUrl::Kind::kDir) return open_dir_store(parsed->path, options);
  const std::string name = clip_for_message(url);
  if (options.access_key_id.empty() || options.secret_access_key.empty()) {
    return fail(Code::kInvalidArgument,
                fmt::format("{}: no S3 credentials: set AWS_ACCESS_KEY_ID and "
                            "AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones), "
                            "or access_key_id and secret_access_key under [fleet] in config.toml",
                            name));
  }
  if (!options.endpoint.empty() && options.endpoint.rfind("http://", 0) != 0 &&
      options.endpoint.rfind("https://", 0) != 0) {
    return fail(Code::kInvalidArgument,
                fmt::format("{}: endpoint \"{}\" must begin with http:// or https:// (set "
                            "AWS_ENDPOINT_URL or endpoint under [fleet] in config.toml)",
                            name, clip_for_message(options.endpoint)));
  }
  return open_s3_store(parsed->bucket, parsed->prefix, options);
}

namespace {

// Says which condition `store` ignored, or passes on why it could not be tested.
Status run_conditional_checks(ObjectStore& store, const std::string& key,
                              const std::string& token) {
  const std::string where = fmt::format("{} (testing with {})", store.describe(), key);
  auto ignored = [&](std::string_view what) {
    return fail(Code::kFailedPrecondition,
                fmt::format("{} cannot hold a fleet: it ignored {}", where, what));
  };
  auto first = store.create(key, "gpuq conditional-write test 1 " + token);
  if (!first) return tl::unexpected(first.error());
  auto second = store.create(key, "gpuq conditional-write test 2 " + token);
  if (second) return ignored("If-None-Match: * (a second create of the key succeeded)");
  if (second.error().code != Code::kConflict) return tl::unexpected(second.error());
  auto current = store.replace(key, "gpuq conditional-write test 3 " + token, *first);
  if (!current) {
    if (current.error().code == Code::kConflict) {
      return ignored("If-Match (a replace with the current ETag lost)");
    }
    return tl::unexpected(current.error());
  }
  auto stale = store.replace(key, "gpuq conditional-write test 4 " + token, *first);
  if (stale) return ignored("If-Match (a replace with a stale ETag succeeded)");
  if (stale.error().code != Code::kConflict) return tl::unexpected(stale.error());
  return ok();
}

}  // namespace

Status verify_conditional_writes(ObjectStore& store, const std::string& scratch_key) {
  if (auto st = check_key(scratch_key); !st) return st;
  // A run that stopped half-way may have left the key behind.
  if (auto st = store.remove(scratch_key); !st) return st;
  const std::string token = fmt::format("{:016x}", random_seed());
  Status checked = run_conditional_checks(store, scratch_key, token);
  Status removed = store.remove(scratch_key);
  if (!checked) return checked;
  return removed;
}

}  // namespace gpuq::fleet
