// SPDX-License-Identifier: Apache-2.0
#include "os/file_tree.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace gpuq::os {
namespace {

namespace fs = std::filesystem;

class FileTree : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpuq-file-tree-XXXXXX";
    root_ = ::mkdtemp(tmpl);
    fs::create_directories(root_ + "/job/run-1/deep");
    fs::create_directories(root_ + "/outside");
    std::ofstream(root_ + "/job/script") << "12345";
    std::ofstream(root_ + "/job/run-1/deep/log") << "123";
    std::ofstream(root_ + "/outside/keep") << std::string(1000, 'k');
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string root_;
};

TEST_F(FileTree, MeasuresAndRemovesATree) {
  EXPECT_EQ(tree_bytes(root_ + "/job"), 8);
  ASSERT_TRUE(remove_tree(root_ + "/job"));
  EXPECT_FALSE(fs::exists(root_ + "/job"));
  EXPECT_TRUE(remove_tree(root_ + "/job"));  // gone already: fine
  EXPECT_EQ(tree_bytes(root_ + "/job"), 0);
}

TEST_F(FileTree, PlantedLinksAreRemovedNotFollowed) {
  fs::create_directory_symlink(root_ + "/outside", root_ + "/job/run-1/link-to-dir");
  fs::create_symlink(root_ + "/outside/keep", root_ + "/job/link-to-file");
  EXPECT_EQ(tree_bytes(root_ + "/job"), 8);  // what the links name is not counted
  ASSERT_TRUE(remove_tree(root_ + "/job"));
  EXPECT_FALSE(fs::exists(root_ + "/job"));
  EXPECT_TRUE(fs::exists(root_ + "/outside/keep"));
}

TEST_F(FileTree, ATreeThatIsALinkLosesOnlyTheLink) {
  fs::create_directory_symlink(root_ + "/outside", root_ + "/linked-job");
  ASSERT_TRUE(remove_tree(root_ + "/linked-job"));
  EXPECT_FALSE(fs::is_symlink(root_ + "/linked-job"));
  EXPECT_TRUE(fs::exists(root_ + "/outside/keep"));
}

}  // namespace
}  // namespace gpuq::os
