// SPDX-License-Identifier: Apache-2.0
// The contract of object_store.h, run against both stores: an S3 bucket (moto, through
// libcurl's signing) and a directory. A test that passes on one and not the other is a store
// that does not keep the contract.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <latch>
#include <thread>

#include "fleet/object_store.h"
#include "s3_server.h"

namespace gpuq::fleet {
namespace {

enum class Backend { kS3, kDir };

// One S3 server for the whole binary (moto takes a second or two to start); each test has
// its own prefix in its bucket.
const Result<std::unique_ptr<testing::S3Server>>& shared_server() {
  static const auto server = testing::S3Server::start();
  return server;
}

std::string test_name() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "-" + info->name();
  for (char& c : name) {
    if (c == '/') c = '-';
  }
  return name;
}

class ObjectStoreContract : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::kS3) {
      const auto& server = shared_server();
      if (!server && server.error().code == Code::kFailedPrecondition) {
        GTEST_SKIP() << server.error().message;
      }
      ASSERT_TRUE(server) << server.error().message;
      url_ = (*server)->url("contract/" + test_name());
      options_ = (*server)->options();
    } else {
      std::string pattern =
          (std::filesystem::temp_directory_path() / "gpuq-dir-store-XXXXXX").string();
      ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
      dir_ = pattern;
      url_ = "dir://" + dir_;
      options_.timeout_ms = 10'000;
    }
    store_ = open();
    ASSERT_NE(store_, nullptr);
  }

  void TearDown() override {
    if (dir_.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // Another store on the same place (one per thread).
  std::unique_ptr<ObjectStore> open() {
    auto store = open_store(url_, options_);
    EXPECT_TRUE(store) << store.error().message;
    return store ? std::move(*store) : nullptr;
  }

  std::vector<std::string> keys_of(const Listing& listing) {
    std::vector<std::string> keys;
    for (const ObjectInfo& info : listing.objects) keys.push_back(info.key);
    return keys;
  }

  std::string url_;
  StoreOptions options_;
  std::string dir_;
  std::unique_ptr<ObjectStore> store_;
};

TEST_P(ObjectStoreContract, PutThenGetGivesTheBodyAndItsEtag) {
  auto etag = store_->put("jobs/a/spec.json", "{\"x\": 1}");
  ASSERT_TRUE(etag) << etag.error().message;
  EXPECT_FALSE(etag->empty());
  EXPECT_EQ(etag->find('"'), std::string::npos);
  auto object = store_->get("jobs/a/spec.json");
  ASSERT_TRUE(object) << object.error().message;
  EXPECT_EQ(object->body, "{\"x\": 1}");
  EXPECT_EQ(object->etag, *etag);
  EXPECT_FALSE(object->not_modified);
  EXPECT_GT(object->modified_ms, 0);
  EXPECT_GT(object->store_now_ms, 0);
}

TEST_P(ObjectStoreContract, EmptyAndBinaryBodiesTravelWhole) {
  ASSERT_TRUE(store_->put("empty", ""));
  std::string binary;
  for (int i = 0; i < 256; ++i) binary.push_back(static_cast<char>(i));
  ASSERT_TRUE(store_->put("binary", binary));
  EXPECT_EQ(store_->get("empty")->body, "");
  EXPECT_EQ(store_->get("binary")->body, binary);
}

TEST_P(ObjectStoreContract, PutReplacesWhateverIsThere) {
  auto first = store_->put("k", "one");
  auto second = store_->put("k", "two");
  ASSERT_TRUE(first && second);
  EXPECT_NE(*first, *second);
  EXPECT_EQ(store_->get("k")->body, "two");
}

TEST_P(ObjectStoreContract, GetOfAMissingKeyIsNotFoundNamingIt) {
  auto object = store_->get("no/such/key");
  ASSERT_FALSE(object);
  EXPECT_EQ(object.error().code, Code::kNotFound);
  EXPECT_NE(object.error().message.find("no/such/key"), std::string::npos)
      << object.error().message;
  EXPECT_NE(object.error().message.find(store_->describe()), std::string::npos);
}

TEST_P(ObjectStoreContract, GetWithTheCurrentEtagIsNotModified) {
  auto etag = store_->put("k", "body");
  ASSERT_TRUE(etag);
  auto same = store_->get("k", *etag);
  ASSERT_TRUE(same) << same.error().message;
  EXPECT_TRUE(same->not_modified);
  EXPECT_EQ(same->body, "");
  EXPECT_EQ(same->etag, *etag);
  auto stale = store_->get("k", "0123456789abcdef");
  ASSERT_TRUE(stale) << stale.error().message;
  EXPECT_FALSE(stale->not_modified);
  EXPECT_EQ(stale->body, "body");
}

TEST_P(ObjectStoreContract, CreateWinsOnceThenConflicts) {
  auto first = store_->create("claims/job-1", "node-a");
  ASSERT_TRUE(first) << first.error().message;
  auto second = store_->create("claims/job-1", "node-b");
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, Code::kConflict) << second.error().message;
  EXPECT_NE(second.error().message.find("claims/job-1"), std::string::npos);
  auto held = store_->get("claims/job-1");
  EXPECT_EQ(held->body, "node-a");
  EXPECT_EQ(held->etag, *first);
}

TEST_P(ObjectStoreContract, ReplaceWithTheCurrentEtagWins) {
  auto etag = store_->create("lease", "v1");
  ASSERT_TRUE(etag);
  auto next = store_->replace("lease", "v2", *etag);
  ASSERT_TRUE(next) << next.error().message;
  EXPECT_NE(*next, *etag);
  auto object = store_->get("lease");
  EXPECT_EQ(object->body, "v2");
  EXPECT_EQ(object->etag, *next);
}

TEST_P(ObjectStoreContract, ReplaceWithAStaleEtagConflicts) {
  auto old_etag = store_->create("lease", "v1");
  ASSERT_TRUE(old_etag);
  ASSERT_TRUE(store_->replace("lease", "v2", *old_etag));
  auto stale = store_->replace("lease", "v3", *old_etag);
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, Code::kConflict) << stale.error().message;
  EXPECT_EQ(store_->get("lease")->body, "v2");
}

TEST_P(ObjectStoreContract, ReplaceOfAMissingKeyIsNotFound) {
  auto etag = store_->put("lease", "v1");
  ASSERT_TRUE(store_->remove("lease"));
  auto gone = store_->replace("lease", "v2", *etag);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, Code::kNotFound) << gone.error().message;
  EXPECT_EQ(store_->get("lease").error().code, Code::kNotFound);
}

TEST_P(ObjectStoreContract, RemoveDeletesAndAMissingKeyIsNoError) {
  ASSERT_TRUE(store_->put("a/b/c", "x"));
  ASSERT_TRUE(store_->remove("a/b/c"));
  EXPECT_EQ(store_->get("a/b/c").error().code, Code::kNotFound);
  auto again = store_->remove("a/b/c");
  EXPECT_TRUE(again) << again.error().message;
  EXPECT_TRUE(store_->remove("never/was"));
  EXPECT_TRUE(store_->create("a/b/c", "y")) << "a removed key can be created again";
}

TEST_P(ObjectStoreContract, ListGivesEveryKeyUnderThePrefixInOrder) {
  for (const char* key : {"nodes/b", "jobs/2", "jobs/10", "jobs/1", "jobsx", "jobs/deep/er/3"}) {
    ASSERT_TRUE(store_->put(key, key));
  }
  auto all = store_->list("");
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_EQ(keys_of(*all), (std::vector<std::string>{"jobs/1", "jobs/10", "jobs/2",
                                                     "jobs/deep/er/3", "jobsx", "nodes/b"}));
  EXPECT_GT(all->store_now_ms, 0);
  auto jobs = store_->list("jobs/");
  ASSERT_TRUE(jobs) << jobs.error().message;
  EXPECT_EQ(keys_of(*jobs),
            (std::vector<std::string>{"jobs/1", "jobs/10", "jobs/2", "jobs/deep/er/3"}));
  auto partial = store_->list("jobs/1");
  ASSERT_TRUE(partial);
  EXPECT_EQ(keys_of(*partial), (std::vector<std::string>{"jobs/1", "jobs/10"}));
  auto none = store_->list("nothing/");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->objects.empty());
}

TEST_P(ObjectStoreContract, ListGivesEachObjectsEtagAndSize) {
  auto etag = store_->put("sized", "12345");
  ASSERT_TRUE(etag);
  auto listing = store_->list("sized");
  ASSERT_TRUE(listing);
  ASSERT_EQ(listing->objects.size(), 1u);
  EXPECT_EQ(listing->objects[0].etag, *etag);
  EXPECT_EQ(listing->objects[0].size, 5);
  EXPECT_GT(listing->objects[0].modified_ms, 0);
}

TEST_P(ObjectStoreContract, ListFollowsPagesPastAThousandKeys) {
  constexpr int kKeys = 1050;
  constexpr int kWriters = 6;
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w, store = open()] {
      for (int i = w; i < kKeys; i += kWriters) {
        if (!store || !store->put(fmt::format("many/k{:04}", i), "x")) ++failures;
      }
    });
  }
  for (auto& writer : writers) writer.join();
  ASSERT_EQ(failures, 0);
  auto listing = store_->list("many/");
  ASSERT_TRUE(listing) << listing.error().message;
  ASSERT_EQ(listing->objects.size(), static_cast<size_t>(kKeys));
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_EQ(listing->objects[i].key, fmt::format("many/k{:04}", i));
  }
}

TEST_P(ObjectStoreContract, RefusedKeysAreInvalidArguments) {
  for (const char* key : {"", "/a", "a/", "a//b", "a/../b", ".", "a b", "a?b", "caf\xc3\xa9"}) {
    SCOPED_TRACE(key);
    EXPECT_EQ(store_->get(key).error().code, Code::kInvalidArgument);
    EXPECT_EQ(store_->put(key, "x").error().code, Code::kInvalidArgument);
    EXPECT_EQ(store_->create(key, "x").error().code, Code::kInvalidArgument);
    EXPECT_EQ(store_->replace(key, "x", "e").error().code, Code::kInvalidArgument);
    EXPECT_EQ(store_->remove(key).error().code, Code::kInvalidArgument);
  }
  EXPECT_EQ(store_->list("/jobs").error().code, Code::kInvalidArgument);
  EXPECT_EQ(store_->list("a b").error().code, Code::kInvalidArgument);
}

TEST_P(ObjectStoreContract, VerifyConditionalWritesPassesAndCleansUp) {
  auto verified = verify_conditional_writes(*store_, "verify/scratch");
  EXPECT_TRUE(verified) << verified.error().message;
  EXPECT_EQ(store_->get("verify/scratch").error().code, Code::kNotFound);
}

// Runs `attempt(*stores[n], n)` on a thread per store, all at once; returns how many
// succeeded. Every other attempt must lose with kConflict.
template <class Attempt>
int race(const std::vector<std::unique_ptr<ObjectStore>>& stores, Attempt attempt) {
  std::latch start(static_cast<std::ptrdiff_t>(stores.size()));
  std::atomic<int> wins{0};
  std::vector<std::thread> racers;
  for (size_t n = 0; n < stores.size(); ++n) {
    racers.emplace_back([&, n] {
      start.arrive_and_wait();
      Result<std::string> result = attempt(*stores[n], static_cast<int>(n));
      if (result) {
        ++wins;
      } else {
        EXPECT_EQ(result.error().code, Code::kConflict) << result.error().message;
      }
    });
  }
  for (auto& racer : racers) racer.join();
  return wins;
}

TEST_P(ObjectStoreContract, OfTwentyRacingCreatesExactlyOneWins) {
  constexpr int kRacers = 20;
  std::vector<std::unique_ptr<ObjectStore>> stores;
  for (int i = 0; i < kRacers; ++i) stores.push_back(open());
  const int wins = race(stores, [](ObjectStore& store, int n) {
    return store.create("claims/hot", fmt::format("racer {}", n));
  });
  EXPECT_EQ(wins, 1);
  auto winner = store_->get("claims/hot");
  ASSERT_TRUE(winner);
  EXPECT_EQ(winner->body.rfind("racer ", 0), 0u);
}

TEST_P(ObjectStoreContract, OfTwentyRacingReplacesOfOneEtagExactlyOneWins) {
  constexpr int kRacers = 20;
  auto etag = store_->put("claims/lease", "start");
  ASSERT_TRUE(etag);
  std::vector<std::unique_ptr<ObjectStore>> stores;
  for (int i = 0; i < kRacers; ++i) stores.push_back(open());
  const int wins = race(stores, [&](ObjectStore& store, int n) {
    return store.replace("claims/lease", fmt::format("racer {}", n), *etag);
  });
  EXPECT_EQ(wins, 1);
  EXPECT_EQ(store_->get("claims/lease")->body.rfind("racer ", 0), 0u);
}

// Files: a size that needs three parts (5 MiB each) on S3, written and read back whole.
std::string file_content(size_t size, int seed) {
  std::string content(size, '\0');
  uint64_t x = 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(seed + 1);
  for (size_t i = 0; i < size; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    content[i] = static_cast<char>(x);
  }
  return content;
}

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_whole(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

// The files of `dir`, for checking that no partial file is left.
std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

class FileTransferContract : public ObjectStoreContract {
 protected:
  void SetUp() override {
    ObjectStoreContract::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    std::string pattern = (std::filesystem::temp_directory_path() / "gpuq-files-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    local_ = pattern;
    options_.part_size = kMinPartSize;
    options_.transfers = 3;
    store_ = open();
  }
  void TearDown() override {
    std::error_code ignored;
    if (!local_.empty()) std::filesystem::remove_all(local_, ignored);
    ObjectStoreContract::TearDown();
  }
  std::string local_;
};

TEST_P(FileTransferContract, AFileOfSeveralPartsGoesAndComesBackByteIdentical) {
  const std::string content = file_content(kMinPartSize * 2 + 12345, 1);
  write_whole(local_ + "/ckpt.bin", content);
  auto pushed = store_->put_file("data/run/ckpt.bin", local_ + "/ckpt.bin");
  ASSERT_TRUE(pushed) << pushed.error().message;
  EXPECT_EQ(pushed->size, static_cast<int64_t>(content.size()));
  EXPECT_FALSE(pushed->etag.empty());
  auto listing = store_->list("data/run/");
  ASSERT_TRUE(listing) << listing.error().message;
  ASSERT_EQ(listing->objects.size(), 1u);
  EXPECT_EQ(listing->objects[0].size, static_cast<int64_t>(content.size()));
  EXPECT_EQ(listing->objects[0].etag, pushed->etag);
  if (GetParam() == Backend::kS3) {
    EXPECT_NE(pushed->etag.find("-3"), std::string::npos) << "three parts: " << pushed->etag;
  }

  auto pulled = store_->get_file("data/run/ckpt.bin", local_ + "/back/ckpt.bin");
  ASSERT_TRUE(pulled) << pulled.error().message;
  EXPECT_EQ(pulled->etag, pushed->etag);
  EXPECT_EQ(pulled->size, static_cast<int64_t>(content.size()));
  EXPECT_TRUE(read_whole(local_ + "/back/ckpt.bin") == content) << "the bytes differ";
  EXPECT_EQ(names_in(local_ + "/back"), std::vector<std::string>{"ckpt.bin"}) << "a partial file was left";
}

TEST_P(FileTransferContract, SmallAndEmptyFilesTravelWhole) {
  write_whole(local_ + "/empty", "");
  write_whole(local_ + "/small", "a small file\n");
  ASSERT_TRUE(store_->put_file("empty", local_ + "/empty"));
  ASSERT_TRUE(store_->put_file("small", local_ + "/small"));
  EXPECT_EQ(store_->get("small")->body, "a small file\n");
  auto empty = store_->get_file("empty", local_ + "/back/empty");
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_EQ(empty->size, 0);
  EXPECT_EQ(read_whole(local_ + "/back/empty"), "");
  ASSERT_TRUE(store_->get_file("small", local_ + "/back/small"));
  EXPECT_EQ(read_whole(local_ + "/back/small"), "a small file\n");
}

TEST_P(FileTransferContract, PutFileReplacesWhatIsThere) {
  write_whole(local_ + "/f", file_content(kMinPartSize + 1, 2));
  ASSERT_TRUE(store_->put_file("f", local_ + "/f"));
  const std::string second = file_content(100, 3);
  write_whole(local_ + "/f", second);
  ASSERT_TRUE(store_->put_file("f", local_ + "/f"));
  EXPECT_TRUE(store_->get("f")->body == second);
}

TEST_P(FileTransferContract, AMissingFileOrKeyIsNotFoundAndLeavesTheTargetAsItWas) {
  auto missing_file = store_->put_file("f", local_ + "/nothing-here");
  ASSERT_FALSE(missing_file);
  EXPECT_EQ(missing_file.error().code, Code::kNotFound);
  EXPECT_NE(missing_file.error().message.find("nothing-here"), std::string::npos) << missing_file.error().message;

  write_whole(local_ + "/target", "kept");
  auto missing_key = store_->get_file("no/such/key", local_ + "/target");
  ASSERT_FALSE(missing_key);
  EXPECT_EQ(missing_key.error().code, Code::kNotFound) << missing_key.error().message;
  EXPECT_NE(missing_key.error().message.find("no/such/key"), std::string::npos) << missing_key.error().message;
  EXPECT_EQ(read_whole(local_ + "/target"), "kept");
  EXPECT_EQ(names_in(local_), std::vector<std::string>{"target"});
}

TEST_P(FileTransferContract, RefusedKeysAreInvalidArguments) {
  write_whole(local_ + "/f", "x");
  auto put = store_->put_file("../escape", local_ + "/f");
  ASSERT_FALSE(put);
  EXPECT_EQ(put.error().code, Code::kInvalidArgument);
  auto get = store_->get_file("a//b", local_ + "/g");
  ASSERT_FALSE(get);
  EXPECT_EQ(get.error().code, Code::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Fleet, FileTransferContract, ::testing::Values(Backend::kS3, Backend::kDir),
                         [](const auto& info) { return info.param == Backend::kS3 ? "S3" : "Dir"; });

INSTANTIATE_TEST_SUITE_P(Fleet, ObjectStoreContract, ::testing::Values(Backend::kS3, Backend::kDir),
                         [](const ::testing::TestParamInfo<Backend>& info) {
                           return info.param == Backend::kS3 ? "S3" : "Dir";
                         });

}  // namespace
}  // namespace gpuq::fleet
