// SPDX-License-Identifier: Apache-2.0
#include "base/token_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace gpuq {
namespace {

namespace fs = std::filesystem;

class TokenFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpuq-token-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "token").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string path_;
};

TEST_F(TokenFile, MadeOnceWithMode0600AndKept) {
  auto first = ensure_token_file(path_, ::geteuid());
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_TRUE(is_token(*first));
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  auto again = ensure_token_file(path_, ::geteuid());
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *first);
  auto read = read_token_file(path_);
  ASSERT_TRUE(read);
  EXPECT_EQ(*read, *first);
  EXPECT_FALSE(fs::exists(path_ + ".new"));
}

TEST_F(TokenFile, TwoTokensDiffer) {
  auto a = random_token();
  auto b = random_token();
  ASSERT_TRUE(a && b);
  EXPECT_NE(*a, *b);
  EXPECT_TRUE(is_token(*a));
}

TEST_F(TokenFile, WiderModeIsRefusedNamingTheFix) {
  ASSERT_TRUE(ensure_token_file(path_, ::geteuid()));
  ::chmod(path_.c_str(), 0640);
  auto refused = ensure_token_file(path_, ::geteuid());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kFailedPrecondition);
  EXPECT_NE(refused.error().message.find(path_), std::string::npos);
  EXPECT_NE(refused.error().message.find("chmod 600"), std::string::npos) << refused.error().message;
}

TEST_F(TokenFile, OtherOwnerIsRefused) {
  ASSERT_TRUE(ensure_token_file(path_, ::geteuid()));
  auto refused = ensure_token_file(path_, ::geteuid() + 1);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("belongs to uid"), std::string::npos);
}

TEST_F(TokenFile, GarbageIsRefusedAndNeverEchoed) {
  { std::ofstream(path_) << "not-a-token\n"; }
  ::chmod(path_.c_str(), 0600);
  auto refused = ensure_token_file(path_, ::geteuid());
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("holds no valid token"), std::string::npos);
  EXPECT_EQ(refused.error().message.find("not-a-token"), std::string::npos);
  auto missing = read_token_file((dir_ / "none").string());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Code::kNotFound);
}

TEST_F(TokenFile, TheListenRecordIsPrivateReplacedAndRemoved) {
  std::string record = (dir_ / "token.listen").string();
  EXPECT_EQ(read_token_listen(record), "");  // none: a daemon older than the record
  ASSERT_TRUE(write_token_listen(record, "127.0.0.1:7878"));
  struct stat st {};
  ASSERT_EQ(::stat(record.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  std::ifstream in(record);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "127.0.0.1:7878\n");
  ASSERT_TRUE(write_token_listen(record, "[::1]:41234"));
  EXPECT_EQ(read_token_listen(record), "[::1]:41234");
  EXPECT_FALSE(fs::exists(record + ".new"));
  ASSERT_TRUE(remove_token_listen(record));
  EXPECT_EQ(read_token_listen(record), "");
  EXPECT_TRUE(remove_token_listen(record));  // already gone
}

TEST(Token, Form) {
  EXPECT_TRUE(is_token(std::string(64, 'a')));
  EXPECT_FALSE(is_token(std::string(63, 'a')));
  EXPECT_FALSE(is_token(std::string(64, 'A')));
  EXPECT_FALSE(is_token(std::string(64, 'g')));
}

}  // namespace
}  // namespace gpuq
