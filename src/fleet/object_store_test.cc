// SPDX-License-Identifier: Apache-2.0
#include "fleet/object_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <map>
#include <optional>

#include "fleet/s3_xml.h"

namespace gpuq::fleet {
namespace {

TEST(ObjectStoreKeys, AcceptsKeysOfTheSafeAlphabet) {
  for (const char* key :
       {"a", "claims/job-12", "nodes/gpu_box.2/heartbeat", ".hidden/x", "a...b", "A-Z/0-9/_.-"}) {
    EXPECT_TRUE(check_key(key)) << key;
  }
  EXPECT_TRUE(check_key(std::string(900, 'k')));
}

TEST(ObjectStoreKeys, RefusesWhatWouldNeedEncodingOrEscapesThePrefix) {
  for (const char* key : {"", "/a", "a/", "a//b", ".", "..", "a/./b", "a/../b", "../x", "a b",
                          "a+b", "a%2Fb", "a?b", "a#b", "a\\b", "caf\xc3\xa9", "tab\t"}) {
    auto st = check_key(key);
    ASSERT_FALSE(st) << key;
    EXPECT_EQ(st.error().code, Code::kInvalidArgument);
    EXPECT_NE(st.error().message.find("A-Z a-z 0-9 . _ - /"), std::string::npos)
        << st.error().message;
  }
  auto long_key = check_key(std::string(901, 'k'));
  ASSERT_FALSE(long_key);
  EXPECT_NE(long_key.error().message.find("too long"), std::string::npos);
  auto nul = check_key(std::string("a\0b", 3));
  ASSERT_FALSE(nul);
  EXPECT_NE(nul.error().message.find("NUL"), std::string::npos);
}

TEST(ObjectStoreKeys, ListPrefixesMayEndAnywhere) {
  for (const char* prefix : {"", "claims/", "claims/jo", "a"}) {
    EXPECT_TRUE(check_list_prefix(prefix)) << prefix;
  }
  for (const char* prefix : {"/claims", "a b", "a?"}) {
    auto st = check_list_prefix(prefix);
    ASSERT_FALSE(st) << prefix;
    EXPECT_EQ(st.error().code, Code::kInvalidArgument);
  }
}

TEST(ObjectStoreUrl, ParsesBucketAndDeepPrefix) {
  auto url = parse_store_url("s3://my-fleet/teams/ml/gpuq/");
  ASSERT_TRUE(url) << url.error().message;
  EXPECT_EQ(url->kind, StoreUrl::Kind::kS3);
  EXPECT_EQ(url->bucket, "my-fleet");
  EXPECT_EQ(url->prefix, "teams/ml/gpuq");
  auto bare = parse_store_url("s3://my-fleet");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->prefix, "");
  auto slash = parse_store_url("s3://my-fleet/");
  ASSERT_TRUE(slash);
  EXPECT_EQ(slash->prefix, "");
}

TEST(ObjectStoreUrl, ParsesAbsoluteDirectories) {
  auto url = parse_store_url("dir:///mnt/nfs/fleet/");
  ASSERT_TRUE(url) << url.error().message;
  EXPECT_EQ(url->kind, StoreUrl::Kind::kDir);
  EXPECT_EQ(url->path, "/mnt/nfs/fleet");
  EXPECT_EQ(parse_store_url("dir:///")->path, "/");
}

TEST(ObjectStoreUrl, RefusesWithWhatToWrite) {
  const std::map<std::string, std::string> cases = {
      {"https://bucket/x", "s3://BUCKET/PREFIX"},
      {"bucket/x", "dir:///PATH"},
      {"dir://relative/path", "absolute path"},
      {"s3://", "empty"},
      {"s3:///prefix", "empty"},
      {"s3://ab/x", "3..63"},
      {"s3://My-Bucket/x", "a-z, 0-9"},
      {"s3://my_bucket", "a-z, 0-9"},
      {"s3://-bucket", "begin and end"},
      {"s3://a..b", "\"..\""},
      {"s3://192.168.1.1", "IP address"},
      {"s3://bucket/a b", "prefix is refused"},
      {"s3://bucket/a//b", "prefix is refused"},
      {"s3://bucket/../b", "prefix is refused"},
  };
  for (const auto& [text, expected] : cases) {
    auto url = parse_store_url(text);
    ASSERT_FALSE(url) << text;
    EXPECT_EQ(url.error().code, Code::kInvalidArgument) << text;
    EXPECT_NE(url.error().message.find(expected), std::string::npos)
        << text << ": " << url.error().message;
  }
}

TEST(ObjectStoreOpen, S3WithoutCredentialsSaysWhatToSet) {
  StoreOptions options;
  options.access_key_id = "AKIA";  // a secret is missing
  auto store = open_store("s3://bucket/prefix", options);
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, Code::kInvalidArgument);
  for (const char* name : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "[fleet]",
                           "secret_access_key", "s3://bucket/prefix"}) {
    EXPECT_NE(store.error().message.find(name), std::string::npos) << store.error().message;
  }
}

TEST(ObjectStoreOpen, S3EndpointNeedsAScheme) {
  StoreOptions options;
  options.access_key_id = "AKIA";
  options.secret_access_key = "secret";
  options.endpoint = "minio.local:9000";
  auto store = open_store("s3://bucket", options);
  ASSERT_FALSE(store);
  EXPECT_NE(store.error().message.find("http://"), std::string::npos) << store.error().message;
  EXPECT_NE(store.error().message.find("AWS_ENDPOINT_URL"), std::string::npos);
  options.endpoint = "http://minio.local:9000";
  auto opened = open_store("s3://bucket", options);
  ASSERT_TRUE(opened) << opened.error().message;
  EXPECT_EQ((*opened)->describe(), "s3://bucket");
}

TEST(ObjectStoreOpen, MissingDirectoryIsNotFoundAndNotMade) {
  auto store = open_store("dir:///nonexistent/gpuq-test-store", {});
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, Code::kNotFound);
  EXPECT_NE(store.error().message.find("mounted"), std::string::npos) << store.error().message;
}

// Sets (or, with nullopt, unsets) variables for one test and puts them back after.
class ScopedEnv {
 public:
  explicit ScopedEnv(std::map<std::string, std::optional<std::string>> values) {
    for (const auto& [name, value] : values) {
      const char* old = std::getenv(name.c_str());
      saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
      set(name, value);
    }
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) set(name, value);
  }

 private:
  static void set(const std::string& name, const std::optional<std::string>& value) {
    if (value) {
      ::setenv(name.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(name.c_str());
    }
  }
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST(ObjectStoreEnvironment, FillsOnlyEmptyFields) {
  ScopedEnv env({{"AWS_ACCESS_KEY_ID", "env-key"},
                 {"AWS_SECRET_ACCESS_KEY", "env-secret"},
                 {"AWS_SESSION_TOKEN", "env-token"},
                 {"AWS_REGION", "eu-west-1"},
                 {"AWS_DEFAULT_REGION", "us-west-2"},
                 {"AWS_ENDPOINT_URL", "http://env:9000"}});
  StoreOptions from_env = with_aws_environment({});
  EXPECT_EQ(from_env.access_key_id, "env-key");
  EXPECT_EQ(from_env.secret_access_key, "env-secret");
  EXPECT_EQ(from_env.session_token, "env-token");
  EXPECT_EQ(from_env.region, "eu-west-1");
  EXPECT_EQ(from_env.endpoint, "http://env:9000");

  StoreOptions configured;
  configured.access_key_id = "config-key";
  configured.region = "ap-south-1";
  configured.endpoint = "https://config";
  StoreOptions kept = with_aws_environment(configured);
  EXPECT_EQ(kept.access_key_id, "config-key");
  EXPECT_EQ(kept.secret_access_key, "env-secret");
  EXPECT_EQ(kept.region, "ap-south-1");
  EXPECT_EQ(kept.endpoint, "https://config");
}

TEST(ObjectStoreEnvironment, DefaultRegionWhenRegionIsUnset) {
  ScopedEnv env({{"AWS_REGION", std::nullopt},
                 {"AWS_DEFAULT_REGION", "us-west-2"},
                 {"AWS_ACCESS_KEY_ID", std::nullopt},
                 {"AWS_ENDPOINT_URL", std::nullopt}});
  StoreOptions options = with_aws_environment({});
  EXPECT_EQ(options.region, "us-west-2");
  EXPECT_EQ(options.access_key_id, "");
  EXPECT_EQ(options.endpoint, "");
}

TEST(ObjectStoreS3Xml, ReadsAListPage) {
  auto page = parse_list_page(
      R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>b</Name><Prefix>p/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>
  <IsTruncated>true</IsTruncated><NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
  <Contents><Key>p/a</Key><LastModified>2026-12-01T21:45:45.000Z</LastModified>
    <ETag>&quot;5d41402abc4b2a76b9719d911017c592&quot;</ETag><Size>5</Size></Contents>
  <Contents><Key>p/b</Key><LastModified>2026-12-01T21:45:46Z</LastModified>
    <ETag>"e2"</ETag><Size>0</Size></Contents>
</ListBucketResult>)");
  ASSERT_TRUE(page) << page.error().message;
  ASSERT_EQ(page->objects.size(), 2u);
  EXPECT_EQ(page->objects[0].key, "p/a");
  EXPECT_EQ(page->objects[0].etag, "5d41402abc4b2a76b9719d911017c592");
  EXPECT_EQ(page->objects[0].size, 5);
  EXPECT_EQ(page->objects[0].modified_ms, 1796161545000);
  EXPECT_EQ(page->objects[1].etag, "e2");
  EXPECT_TRUE(page->truncated);
  EXPECT_EQ(page->next_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
}

TEST(ObjectStoreS3Xml, RefusesWhatIsNotAListing) {
  EXPECT_EQ(parse_list_page("<html>oops</html>").error().code, Code::kIoError);
  EXPECT_EQ(parse_list_page("not xml <<").error().code, Code::kIoError);
  auto no_token =
      parse_list_page("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>");
  ASSERT_FALSE(no_token);
  EXPECT_NE(no_token.error().message.find("NextContinuationToken"), std::string::npos);
  auto bad_size = parse_list_page(
      "<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents></ListBucketResult>");
  EXPECT_FALSE(bad_size);
}

TEST(ObjectStoreS3Xml, ReadsAnErrorBody) {
  S3ErrorBody error = parse_error_body(
      "<?xml version=\"1.0\"?><Error><Code>PreconditionFailed</Code><Message>At least one of "
      "the pre-conditions you specified did not hold</Message></Error>");
  EXPECT_EQ(error.code, "PreconditionFailed");
  EXPECT_EQ(error.message, "At least one of the pre-conditions you specified did not hold");
  EXPECT_EQ(parse_error_body("").code, "");
  EXPECT_EQ(parse_error_body("<html/>").code, "");
}

}  // namespace
}  // namespace gpuq::fleet
