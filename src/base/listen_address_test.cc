// SPDX-License-Identifier: Apache-2.0
#include "base/listen_address.h"

#include <gtest/gtest.h>

namespace gpuq {
namespace {

TEST(ListenAddress, Forms) {
  auto v4 = parse_listen_address("127.0.0.1:7878");
  ASSERT_TRUE(v4 && *v4);
  EXPECT_EQ((*v4)->host, "127.0.0.1");
  EXPECT_EQ((*v4)->port, 7878);
  EXPECT_EQ((*v4)->text(), "127.0.0.1:7878");
  auto v6 = parse_listen_address("[::1]:0");
  ASSERT_TRUE(v6 && *v6);
  EXPECT_EQ((*v6)->host, "::1");
  EXPECT_TRUE((*v6)->ipv6);
  EXPECT_EQ((*v6)->host_header(), "[::1]");
  EXPECT_EQ((*v6)->text(), "[::1]:0");
  auto local = parse_listen_address("localhost:80");
  ASSERT_TRUE(local && *local);
  EXPECT_EQ((*local)->host, "127.0.0.1");
  auto off = parse_listen_address("off");
  ASSERT_TRUE(off);
  EXPECT_FALSE(*off);
}

TEST(ListenAddress, OnlyLoopbackAddressesAreThisMachinesAlone) {
  auto loopback = [](const char* text) { return (*parse_listen_address(text))->loopback(); };
  EXPECT_TRUE(loopback("127.0.0.1:7878"));
  EXPECT_TRUE(loopback("127.3.2.1:1"));
  EXPECT_TRUE(loopback("localhost:80"));
  EXPECT_TRUE(loopback("[::1]:7878"));
  EXPECT_FALSE(loopback("0.0.0.0:7878"));
  EXPECT_FALSE(loopback("10.0.0.5:7878"));
  EXPECT_FALSE(loopback("[::]:7878"));
  EXPECT_FALSE(loopback("[fe80::1]:7878"));
}

TEST(ListenAddress, Refused) {
  for (const char* text : {"", "7878", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1",
                           "box.lan:7878", "::1:7878", "[::1]7878", "[nope]:1", "1.2.3:80", "OFF"}) {
    auto parsed = parse_listen_address(text);
    ASSERT_FALSE(parsed) << text;
    EXPECT_EQ(parsed.error().code, Code::kInvalidArgument);
    EXPECT_NE(parsed.error().message.find("ADDR:PORT"), std::string::npos) << parsed.error().message;
  }
}

}  // namespace
}  // namespace gpuq
