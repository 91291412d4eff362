#include "spec/script.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gpuq::spec {
namespace {

class ScriptFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("gpuq-spec-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    auto path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(ScriptFiles, ReadsAGoodScript) {
  auto text = read_script(write("ok.sh", "#!/bin/bash\necho héllo\n"));
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(*text, "#!/bin/bash\necho héllo\n");
}

TEST_F(ScriptFiles, RefusesMissing) {
  auto text = read_script((dir_ / "nope.sh").string());
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().message.find("nope.sh: no such script"), std::string::npos);
}

TEST_F(ScriptFiles, RefusesEmptyAndBlank) {
  for (const char* body : {"", "  \n\n\t"}) {
    auto text = read_script(write("empty.sh", body));
    ASSERT_FALSE(text);
    EXPECT_NE(text.error().message.find("script is empty"), std::string::npos);
  }
}

TEST_F(ScriptFiles, RefusesBinaryNamingTheLine) {
  auto text = read_script(write("bin.sh", std::string("#!/bin/sh\necho\n\x7f" "ELF\0\0", 20)));
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().message.find("bin.sh:3: script contains a NUL byte"), std::string::npos)
      << text.error().message;
}

TEST_F(ScriptFiles, RefusesInvalidUtf8) {
  auto text = read_script(write("latin1.sh", "#!/bin/sh\necho caf\xe9\n"));
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().message.find("latin1.sh:2: script is not UTF-8"), std::string::npos)
      << text.error().message;
}

TEST_F(ScriptFiles, RefusesUnreadable) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads files whatever their mode";
  auto path = write("secret.sh", "echo hi\n");
  chmod(path.c_str(), 0);
  auto text = read_script(path);
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().message.find("cannot read"), std::string::npos);
}

TEST_F(ScriptFiles, RefusesADirectory) {
  auto text = read_script(dir_.string());
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().message.find("is a directory"), std::string::npos);
}

}  // namespace
}  // namespace gpuq::spec

namespace gpuq::spec {
namespace {
TEST(ScriptSpecialFiles, RefusesAFifoWithoutBlocking) {
  auto path = std::filesystem::temp_directory_path() / ("gpuq-fifo-" + std::to_string(getpid()));
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  auto text = read_script(path.string());
  std::filesystem::remove(path);
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().message.find("not a regular file"), std::string::npos);
}
}  // namespace
}  // namespace gpuq::spec
