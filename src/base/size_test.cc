// SPDX-License-Identifier: Apache-2.0
#include "base/size.h"

#include <gtest/gtest.h>

namespace gpuq {
namespace {

TEST(ParseSize, UnitsAndBytes) {
  EXPECT_EQ(*parse_size("2GiB"), int64_t{2} << 30);
  EXPECT_EQ(*parse_size("512MiB"), int64_t{512} << 20);
  EXPECT_EQ(*parse_size("1KiB"), 1024);
  EXPECT_EQ(*parse_size("3TiB"), int64_t{3} << 40);
  EXPECT_EQ(*parse_size("100MB"), 100'000'000);
  EXPECT_EQ(*parse_size("2GB"), 2'000'000'000);
  EXPECT_EQ(*parse_size("1KB"), 1000);
  EXPECT_EQ(*parse_size("42B"), 42);
  EXPECT_EQ(*parse_size("42"), 42);
  EXPECT_EQ(*parse_size("0"), 0);
  EXPECT_EQ(*parse_size("1.5GiB"), int64_t{3} << 29);
  EXPECT_EQ(*parse_size("0.5KiB"), 512);
  EXPECT_EQ(*parse_size("2.5MB"), 2'500'000);
  EXPECT_EQ(*parse_size("1.0001KiB"), 1024) << "rounded to the nearest byte";
}

TEST(ParseSize, RefusesWhatIsNotASize) {
  for (const char* text : {"", "GiB", "1.5.1GiB", "-1GiB", "2 GiB", "2gib", "2GiBs", "2G", "x", "."}) {
    auto size = parse_size(text);
    ASSERT_FALSE(size) << text;
    EXPECT_EQ(size.error().code, Code::kInvalidArgument);
    EXPECT_NE(size.error().message.find("e.g. \"2GiB\""), std::string::npos) << size.error().message;
  }
  EXPECT_FALSE(parse_size("99999999999999999999"));
  EXPECT_NE(parse_size("2G").error().message.find("bad size '2G': unknown unit 'G'"), std::string::npos);
  EXPECT_FALSE(parse_size("5000000TiB")) << "past 2^62 bytes";
  EXPECT_TRUE(parse_size("4194304TiB")) << "exactly 2^62 bytes";
}

TEST(FormatSize, LargestBinaryUnitThatDivides) {
  EXPECT_EQ(format_size(int64_t{2} << 30), "2GiB");
  EXPECT_EQ(format_size(1536 << 10), "1536KiB");
  EXPECT_EQ(format_size(1500), "1500B");
  EXPECT_EQ(format_size(0), "0B");
}

}  // namespace
}  // namespace gpuq
