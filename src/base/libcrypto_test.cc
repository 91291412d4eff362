// SPDX-License-Identifier: Apache-2.0
#include "base/libcrypto.h"

#include <gtest/gtest.h>

namespace gpuq {
namespace {

TEST(Md5, KnownDigests) {
  // RFC 1321's test suite.
  auto empty = md5_of("");
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_EQ(to_hex(*empty), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(to_base64(*empty), "1B2M2Y8AsgTpgAmY7PhCfg==");
  auto abc = md5_of("abc");
  ASSERT_TRUE(abc);
  EXPECT_EQ(to_hex(*abc), "900150983cd24fb0d6963f7d28e17f72");
}

TEST(Md5, IncrementalEqualsWhole) {
  std::string text(1 << 20, '\0');
  for (size_t i = 0; i < text.size(); ++i) text[i] = static_cast<char>(i * 7919 % 251);
  auto md5 = Md5::start();
  ASSERT_TRUE(md5);
  for (size_t at = 0; at < text.size(); at += 4097) md5->update(std::string_view(text).substr(at, 4097));
  EXPECT_EQ(to_hex(md5->digest()), to_hex(*md5_of(text)));
}

}  // namespace
}  // namespace gpuq
