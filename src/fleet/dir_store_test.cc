// SPDX-License-Identifier: Apache-2.0
// What only the directory store has: its files, its lock, and processes racing on one root.
// The contract it shares with the S3 store is tests/fleet/store_contract_test.cc.
#include "fleet/dir_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "fleet/object_store.h"

namespace gpuq::fleet {
namespace {

namespace fs = std::filesystem;

class DirStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gpuq-dir-store-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    store_ = open();
    ASSERT_NE(store_, nullptr);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }

  std::unique_ptr<ObjectStore> open(int64_t timeout_ms = 10'000) {
    StoreOptions options;
    options.timeout_ms = timeout_ms;
    auto store = open_store("dir://" + root_, options);
    EXPECT_TRUE(store) << store.error().message;
    return store ? std::move(*store) : nullptr;
  }

  void write_file(const std::string& rel, const std::string& text) {
    fs::create_directories((fs::path(root_) / rel).parent_path());
    std::ofstream(fs::path(root_) / rel) << text;
  }

  std::vector<std::string> listed(const std::string& prefix = "") {
    std::vector<std::string> keys;
    auto listing = store_->list(prefix);
    EXPECT_TRUE(listing) << listing.error().message;
    if (listing) {
      for (const ObjectInfo& info : listing->objects) keys.push_back(info.key);
    }
    return keys;
  }

  std::string root_;
  std::unique_ptr<ObjectStore> store_;
};

TEST_F(DirStoreTest, ObjectsAreThePlainFilesUnderTheRoot) {
  ASSERT_TRUE(store_->put("jobs/1/spec.json", "{}"));
  std::ifstream in(fs::path(root_) / "jobs/1/spec.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "{}");
  write_file("by/hand", "typed");
  auto object = store_->get("by/hand");
  ASSERT_TRUE(object) << object.error().message;
  EXPECT_EQ(object->body, "typed");
  EXPECT_EQ(store_->describe(), "dir://" + root_);
}

TEST_F(DirStoreTest, RewritingTheSameContentChangesTheEtag) {
  auto first = store_->put("k", "same");
  auto second = store_->put("k", "same");
  ASSERT_TRUE(first && second);
  EXPECT_NE(*first, *second);
  auto stale = store_->replace("k", "same", *first);
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, Code::kConflict);
  // Removed and created again with the same content: still another ETag.
  ASSERT_TRUE(store_->remove("k"));
  auto again = store_->create("k", "same");
  ASSERT_TRUE(again);
  EXPECT_NE(*again, *second);
  EXPECT_FALSE(store_->replace("k", "other", *second));
}

TEST_F(DirStoreTest, LeftoverTemporaryFilesAndTheLockAreNotListed) {
  ASSERT_TRUE(store_->put("a/b", "x"));  // made the lock file
  EXPECT_TRUE(fs::exists(fs::path(root_) / kDirStoreLockName));
  write_file("a/#tmp-0123456789abcdef", "half written");
  write_file("a/not a key", "x");
  EXPECT_EQ(listed(), (std::vector<std::string>{"a/b"}));
  auto lock_key = store_->get(kDirStoreLockName);
  ASSERT_FALSE(lock_key);
  EXPECT_EQ(lock_key.error().code, Code::kInvalidArgument);
  EXPECT_EQ(store_->put(kDirStoreLockName, "x").error().code, Code::kInvalidArgument);
}

TEST_F(DirStoreTest, RemoveTakesEmptiedFoldersAway) {
  ASSERT_TRUE(store_->put("a/b/c/d", "x"));
  ASSERT_TRUE(store_->put("a/keep", "x"));
  ASSERT_TRUE(store_->remove("a/b/c/d"));
  EXPECT_FALSE(fs::exists(fs::path(root_) / "a/b"));
  EXPECT_TRUE(fs::exists(fs::path(root_) / "a/keep"));
  EXPECT_TRUE(store_->put("a/b/c/d", "back")) << "a removed folder is made again";
}

TEST_F(DirStoreTest, AFolderIsNoObjectAndAFileIsNoFolder) {
  ASSERT_TRUE(store_->put("a/b", "x"));
  EXPECT_EQ(store_->get("a").error().code, Code::kNotFound);
  EXPECT_EQ(store_->create("a", "x").error().code, Code::kConflict);
  auto under_file = store_->put("a/b/c", "x");
  ASSERT_FALSE(under_file);
  EXPECT_EQ(under_file.error().code, Code::kIoError);
  EXPECT_NE(under_file.error().message.find("a/b/c"), std::string::npos);
  EXPECT_EQ(store_->get("a/b/c").error().code, Code::kNotFound);
}

TEST_F(DirStoreTest, AHeldLockMakesWritesUnavailableAfterTheTimeout) {
  auto quick = open(50);
  ASSERT_TRUE(quick->put("k", "v1"));
  // Another open file description holds the lock, as another process would.
  const int fd = ::open((fs::path(root_) / kDirStoreLockName).c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  auto blocked = quick->put("k", "v2");
  ::close(fd);
  ASSERT_FALSE(blocked);
  EXPECT_EQ(blocked.error().code, Code::kUnavailable);
  EXPECT_NE(blocked.error().message.find(".gpuq-lock"), std::string::npos);
  EXPECT_EQ(quick->get("k")->body, "v1");
  EXPECT_EQ(listed(), (std::vector<std::string>{"k"})) << "the unused temporary file is gone";
  EXPECT_TRUE(quick->put("k", "v3")) << "the lock is free again";
}

// Processes, not threads: the lock that keeps them apart is the file lock alone.
TEST_F(DirStoreTest, OfRacingProcessesExactlyOneCreates) {
  constexpr int kProcesses = 8;
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  std::vector<pid_t> children;
  for (int n = 0; n < kProcesses; ++n) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(go[1]);
      auto store = open_store("dir://" + root_, {});
      char byte = 0;
      (void)::read(go[0], &byte, 1);  // all start together, when the parent closes the pipe
      if (!store) ::_exit(3);
      auto created = (*store)->create("claims/job", "process " + std::to_string(n));
      if (!created && created.error().code != Code::kConflict) {
        std::fprintf(stderr, "%s\n", created.error().message.c_str());
      }
      ::_exit(created ? 0 : created.error().code == Code::kConflict ? 1 : 2);
    }
    children.push_back(pid);
  }
  ::close(go[0]);
  ::close(go[1]);
  int winners = 0;
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_LE(WEXITSTATUS(status), 1) << "a process failed other than by losing";
    if (WEXITSTATUS(status) == 0) ++winners;
  }
  EXPECT_EQ(winners, 1);
}

}  // namespace
}  // namespace gpuq::fleet
