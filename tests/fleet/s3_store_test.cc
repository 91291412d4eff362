// SPDX-License-Identifier: Apache-2.0
// What only the S3 store has, against moto on loopback: signing, prefixes within a bucket,
// HTTP failures and their messages, retries, and answers lost after a write was done. The
// contract shared with the directory store is store_contract_test.cc.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fleet/object_store.h"
#include "s3_server.h"
#include "tcp_proxy.h"

namespace gpuq::fleet {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A port of 127.0.0.1 that nothing listens on: bound and closed again.
int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof(address);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), size);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
  ::close(fd);
  return ntohs(address.sin_port);
}

class S3StoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto started = testing::S3Server::start();
    if (started) {
      server_ = std::move(*started).release();
    } else {
      start_error_ = new Error(started.error());
    }
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete start_error_;
    start_error_ = nullptr;
  }

  void SetUp() override {
    if (start_error_ != nullptr && start_error_->code == Code::kFailedPrecondition) {
      GTEST_SKIP() << start_error_->message;
    }
    ASSERT_NE(server_, nullptr) << start_error_->message;
    prefix_ = std::string("s3-") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }

  std::unique_ptr<ObjectStore> open(const std::string& url, const StoreOptions& options) {
    auto store = open_store(url, options);
    EXPECT_TRUE(store) << store.error().message;
    return store ? std::move(*store) : nullptr;
  }
  std::unique_ptr<ObjectStore> open() { return open(server_->url(prefix_), server_->options()); }

  static testing::S3Server* server_;
  static Error* start_error_;
  std::string prefix_;
};

testing::S3Server* S3StoreTest::server_ = nullptr;
Error* S3StoreTest::start_error_ = nullptr;

TEST_F(S3StoreTest, PrefixesKeepStoresApart) {
  auto short_prefix = open(server_->url(prefix_ + "/a"), server_->options());
  auto long_prefix = open(server_->url(prefix_ + "/ab"), server_->options());
  auto whole = open(server_->url(prefix_), server_->options());
  ASSERT_TRUE(short_prefix->put("k", "in a"));
  ASSERT_TRUE(long_prefix->put("k", "in ab"));
  auto listing = short_prefix->list("");
  ASSERT_TRUE(listing) << listing.error().message;
  ASSERT_EQ(listing->objects.size(), 1u);
  EXPECT_EQ(listing->objects[0].key, "k");
  EXPECT_EQ(whole->get("a/k")->body, "in a");
  auto both = whole->list("a");
  ASSERT_TRUE(both);
  ASSERT_EQ(both->objects.size(), 2u);
  EXPECT_EQ(both->objects[0].key, "a/k");
  EXPECT_EQ(both->objects[1].key, "ab/k");
}

TEST_F(S3StoreTest, ARefusedKeySendsNoRequest) {
  // Nothing listens there: a request would end in kUnavailable, not kInvalidArgument.
  StoreOptions options = server_->options();
  options.endpoint = "http://127.0.0.1:" + std::to_string(closed_port());
  auto store = open(server_->url(prefix_), options);
  auto refused = store->put("a b", "x");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kInvalidArgument) << refused.error().message;
}

TEST_F(S3StoreTest, AWrongSecretIsRefusedWith403) {
  StoreOptions options = server_->options();
  options.secret_access_key = "not-the-secret";
  auto store = open(server_->url(prefix_), options);
  auto refused = store->put("jobs/1", "x");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kIoError);
  const std::string& message = refused.error().message;
  EXPECT_TRUE(contains(message, "403")) << message;
  EXPECT_TRUE(contains(message, "SignatureDoesNotMatch")) << message;
  EXPECT_TRUE(contains(message, "jobs/1")) << message;
  EXPECT_TRUE(contains(message, server_->url(prefix_))) << message;
}

TEST_F(S3StoreTest, AMissingBucketIsNoMissingKey) {
  auto store = open("s3://gpuq-no-such-bucket/x", server_->options());
  auto object = store->get("k");
  ASSERT_FALSE(object);
  EXPECT_EQ(object.error().code, Code::kIoError);
  EXPECT_TRUE(contains(object.error().message, "NoSuchBucket")) << object.error().message;
  EXPECT_FALSE(store->remove("k")) << "removing from a missing bucket is an error";
}

TEST_F(S3StoreTest, AnotherBucketCanBeMade) {
  ASSERT_TRUE(server_->create_bucket("gpuq-second"));
  auto store = open("s3://gpuq-second/" + prefix_, server_->options());
  ASSERT_TRUE(store->put("k", "v"));
  EXPECT_EQ(store->get("k")->body, "v");
}

TEST_F(S3StoreTest, AnUnreachableEndpointIsUnavailableAfterRetries) {
  StoreOptions options = server_->options();
  options.endpoint = "http://127.0.0.1:" + std::to_string(closed_port());
  auto store = open(server_->url(prefix_), options);
  auto object = store->get("jobs/1");
  ASSERT_FALSE(object);
  EXPECT_EQ(object.error().code, Code::kUnavailable);
  EXPECT_TRUE(contains(object.error().message, "after 3 attempts")) << object.error().message;
  EXPECT_TRUE(contains(object.error().message, "jobs/1")) << object.error().message;
  EXPECT_EQ(store->list("").error().code, Code::kUnavailable);
}

class S3ThroughProxyTest : public S3StoreTest {
 protected:
  void SetUp() override {
    S3StoreTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto proxy = testing::TcpProxy::start(server_->port());
    ASSERT_TRUE(proxy) << proxy.error().message;
    proxy_ = std::move(*proxy);
    StoreOptions options = server_->options();
    options.endpoint = proxy_->endpoint();
    store_ = open(server_->url(prefix_), options);
    ASSERT_NE(store_, nullptr);
  }

  std::unique_ptr<testing::TcpProxy> proxy_;
  std::unique_ptr<ObjectStore> store_;
};

TEST_F(S3ThroughProxyTest, ACutNetworkIsUnavailableUntilItIsBack) {
  ASSERT_TRUE(store_->put("k", "v"));
  proxy_->cut();
  auto cut = store_->get("k");
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.error().code, Code::kUnavailable) << cut.error().message;
  EXPECT_EQ(store_->create("k2", "v").error().code, Code::kUnavailable);
  ASSERT_TRUE(proxy_->restore());
  auto back = store_->get("k");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->body, "v");
}

TEST_F(S3ThroughProxyTest, ALostAnswerIsRetried) {
  ASSERT_TRUE(store_->put("k", "v"));
  proxy_->lose_answers(1);
  auto object = store_->get("k");
  ASSERT_TRUE(object) << object.error().message;
  EXPECT_EQ(object->body, "v");
  EXPECT_EQ(proxy_->answers_lost(), 1);
}

TEST_F(S3ThroughProxyTest, ACreateWhoseAnswerWasLostIsSettledByReadingBack) {
  proxy_->lose_answers(1);  // the create is done; its answer never comes; the retry gets 412
  auto created = store_->create("claims/job", "node-a token-1");
  ASSERT_TRUE(created) << created.error().message;
  EXPECT_EQ(proxy_->answers_lost(), 1);
  auto object = store_->get("claims/job");
  EXPECT_EQ(object->body, "node-a token-1");
  EXPECT_EQ(object->etag, *created);
}

TEST_F(S3ThroughProxyTest, AReplaceWhoseAnswerWasLostIsSettledByReadingBack) {
  auto etag = store_->put("lease", "node-a 1");
  ASSERT_TRUE(etag);
  proxy_->lose_answers(1);
  auto renewed = store_->replace("lease", "node-a 2", *etag);
  ASSERT_TRUE(renewed) << renewed.error().message;
  EXPECT_EQ(proxy_->answers_lost(), 1);
  EXPECT_EQ(store_->get("lease")->etag, *renewed);
}

TEST_F(S3ThroughProxyTest, ALostAnswerDoesNotTurnAnotherWritersObjectIntoOurs) {
  ASSERT_TRUE(store_->put("claims/job", "node-b token-2"));
  proxy_->lose_answers(1);  // our create lost (412), but we never heard it
  auto created = store_->create("claims/job", "node-a token-1");
  ASSERT_FALSE(created);
  EXPECT_EQ(created.error().code, Code::kConflict) << created.error().message;
  EXPECT_TRUE(contains(created.error().message, "412")) << created.error().message;
  EXPECT_EQ(proxy_->answers_lost(), 1);
  EXPECT_EQ(store_->get("claims/job")->body, "node-b token-2");
}

}  // namespace
}  // namespace gpuq::fleet
