// SPDX-License-Identifier: Apache-2.0
#include "spec/script.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
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

// Found by fuzz/headers_fuzz.cc: the check took any lead byte with the right continuation
// bytes, so an overlong "\xc1\xa9" passed, and nlohmann's dump() of the submit request (which
// carries the script and its header values) threw. UTF-8 is checked as RFC 3629 defines it.
TEST(ScriptText, RefusesOverlongSurrogateAndOutOfRangeSequences) {
  for (const char* bad : {"\xc0\xaf", "\xc1\xa9", "\xe0\x80\xaf", "\xed\xa0\x80",
                          "\xf0\x8f\xbf\xbf", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80",
                          "\xf8\x88\x80\x80\x80", "\xe2\x82", "\x80"}) {
    std::string text = std::string("#!/bin/sh\n#gpuq name=caf") + bad + "\ntrue\n";
    auto checked = check_script_text("job.sh", text);
    ASSERT_FALSE(checked) << ::testing::PrintToString(text);
    EXPECT_NE(checked.error().message.find("job.sh:2: script is not UTF-8"), std::string::npos)
        << checked.error().message;
    EXPECT_THROW((void)nlohmann::json(text).dump(), nlohmann::json::type_error);
  }
  for (const char* good : {"caf\xc3\xa9", "\xe2\x82\xac", "\xed\x9f\xbf", "\xee\x80\x80",
                           "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf", "\xc2\x80"}) {
    std::string text = std::string("#!/bin/sh\necho ") + good + "\n";
    EXPECT_TRUE(check_script_text("job.sh", text)) << ::testing::PrintToString(text);
    EXPECT_NO_THROW((void)nlohmann::json(text).dump());
  }
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
