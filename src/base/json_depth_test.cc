// SPDX-License-Identifier: Apache-2.0
#include "base/json_depth.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuq {
namespace {

TEST(JsonDepth, FindsTheFirstBracketBeyondTheLimit) {
  EXPECT_EQ(json_nesting_beyond("", 1), std::nullopt);
  EXPECT_EQ(json_nesting_beyond("1", 0), std::nullopt);
  EXPECT_EQ(json_nesting_beyond("[]", 0), std::optional<size_t>(0));
  EXPECT_EQ(json_nesting_beyond(R"({"a": [1, {"b": []}]})", 4), std::nullopt);
  EXPECT_EQ(json_nesting_beyond(R"({"a": [1, {"b": []}]})", 3), std::optional<size_t>(16));
  EXPECT_EQ(json_nesting_beyond(R"({"a": [1, {"b": []}]})", 2), std::optional<size_t>(10));
  // Siblings do not add up; closing brackets end a level.
  EXPECT_EQ(json_nesting_beyond("[[],[],[[]]]", 3), std::nullopt);
  EXPECT_EQ(json_nesting_beyond("[[],[],[[]]]", 2), std::optional<size_t>(8));
}

TEST(JsonDepth, BracketsInsideStringsDoNotCount) {
  EXPECT_EQ(json_nesting_beyond(R"(["[[[{{{", "\"[[[", "\\"])", 1), std::nullopt);
  EXPECT_EQ(json_nesting_beyond(R"(["\\", [1]])", 1), std::optional<size_t>(7));
  EXPECT_EQ(json_nesting_beyond(R"(["unterminated [[[)", 1), std::nullopt);
}

TEST(JsonDepth, DeepTextIsScannedWithoutRecursion) {
  std::string deep = std::string(1'000'000, '[') + std::string(1'000'000, ']');
  EXPECT_EQ(json_nesting_beyond(deep, 64), std::optional<size_t>(64));
  EXPECT_EQ(json_nesting_beyond(deep, 1'000'000), std::nullopt);
}

}  // namespace
}  // namespace gpuq
