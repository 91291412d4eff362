// SPDX-License-Identifier: Apache-2.0
#include "os/safe_open.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace gpuq::os {
namespace {

namespace fs = std::filesystem;

// Both ways of resolving: the kernel's openat2 and the walk used where it is missing.
class SafeOpen : public ::testing::TestWithParam<BeneathOptions::Resolve> {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpuq-safe-open-XXXXXX";
    root_ = ::mkdtemp(tmpl);
    fs::create_directories(root_ + "/jobs/5/run-1");
    fs::create_directories(root_ + "/elsewhere");
    write(root_ + "/jobs/5/run-1/exit.json", "{}");
    write(root_ + "/elsewhere/secret", "secret");
  }
  void TearDown() override { fs::remove_all(root_); }
  static void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
  BeneathOptions options(bool regular = false) const {
    BeneathOptions o;
    o.resolve = GetParam();
    o.regular_file = regular;
    return o;
  }
  Result<std::string> read(const std::string& relative, std::optional<uid_t> owner = std::nullopt) {
    BeneathOptions o = options(true);
    o.owner = owner;
    auto fd = open_beneath(root_ + "/jobs", relative, O_RDONLY, 0, o);
    if (!fd) return tl::unexpected(fd.error());
    auto text = read_open_file(*fd, 1 << 20, relative);
    ::close(*fd);
    return text;
  }
  std::string root_;
};

TEST_P(SafeOpen, OpensAFileBeneathTheDirectory) {
  auto text = read("5/run-1/exit.json");
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(*text, "{}");
}

TEST_P(SafeOpen, ALinkAsTheFileIsNotFollowed) {
  fs::remove(root_ + "/jobs/5/run-1/exit.json");
  fs::create_symlink(root_ + "/elsewhere/secret", root_ + "/jobs/5/run-1/exit.json");
  auto text = read("5/run-1/exit.json");
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().code, Code::kPermissionDenied) << text.error().message;
}

TEST_P(SafeOpen, ALinkAsADirectoryOnTheWayIsNotFollowed) {
  fs::rename(root_ + "/jobs/5/run-1", root_ + "/jobs/5/moved");
  fs::create_directories(root_ + "/elsewhere/run");
  write(root_ + "/elsewhere/run/exit.json", "planted");
  fs::create_directory_symlink(root_ + "/elsewhere/run", root_ + "/jobs/5/run-1");
  auto text = read("5/run-1/exit.json");
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().code, Code::kPermissionDenied) << text.error().message;
}

TEST_P(SafeOpen, DotDotAndAbsolutePathsAreRefused) {
  EXPECT_FALSE(read("../elsewhere/secret"));
  EXPECT_FALSE(read("5/../../elsewhere/secret"));
  EXPECT_FALSE(read("/etc/passwd"));
}

TEST_P(SafeOpen, AFifoIsRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo((root_ + "/jobs/5/run-1/steps.json").c_str(), 0600), 0);
  auto text = read("5/run-1/steps.json");  // would hang forever with a blocking open
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().code, Code::kPermissionDenied);
}

TEST_P(SafeOpen, AFileOfAnotherOwnerIsRefused) {
  EXPECT_TRUE(read("5/run-1/exit.json", ::geteuid()));
  auto text = read("5/run-1/exit.json", ::geteuid() + 1);
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().message.find("owned by"), std::string::npos);
}

TEST_P(SafeOpen, CreatesAFileButNeverThroughALink) {
  auto fd = open_beneath(root_ + "/jobs", "5/run-1/yield", O_WRONLY | O_CREAT | O_EXCL, 0600, options());
  ASSERT_TRUE(fd) << fd.error().message;
  ::close(*fd);
  EXPECT_TRUE(fs::exists(root_ + "/jobs/5/run-1/yield"));
  fs::create_symlink(root_ + "/elsewhere/new", root_ + "/jobs/5/run-1/other");
  EXPECT_FALSE(open_beneath(root_ + "/jobs", "5/run-1/other", O_WRONLY | O_CREAT, 0600, options()));
  EXPECT_FALSE(fs::exists(root_ + "/elsewhere/new"));
}

TEST_P(SafeOpen, ReadFileBeneathCapsTheSize) {
  write(root_ + "/jobs/5/run-1/big", std::string(5000, 'x'));
  auto big = read_file_beneath(root_ + "/jobs", "5/run-1/big", 4096);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().code, Code::kCorruption);
  auto missing = read_file_beneath(root_ + "/jobs", "5/run-1/none", 4096);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Code::kNotFound);
}

INSTANTIATE_TEST_SUITE_P(Resolve, SafeOpen,
                         ::testing::Values(BeneathOptions::Resolve::kKernel, BeneathOptions::Resolve::kWalk));

TEST(SplitTrusted, CutsThePathLevelsUp) {
  EXPECT_EQ(split_trusted("/var/lib/gpuq/jobs/5/run-1/exit.json", 3),
            (std::pair<std::string, std::string>{"/var/lib/gpuq/jobs", "5/run-1/exit.json"}));
  EXPECT_EQ(split_trusted("/a/b", 2), (std::pair<std::string, std::string>{"/", "a/b"}));
  EXPECT_EQ(split_trusted("a/b", 1), (std::pair<std::string, std::string>{"a", "b"}));
}

}  // namespace
}  // namespace gpuq::os
