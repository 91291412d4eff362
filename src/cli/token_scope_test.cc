// SPDX-License-Identifier: Apache-2.0
// Where the home's token may go under `gpuq --url` (cli/token_scope.h).
#include "cli/token_scope.h"

#include <gtest/gtest.h>

namespace gpuq::cli {
namespace {

DaemonUrl url(const std::string& authority) { return DaemonUrl{"http://" + authority, authority}; }

TEST(TokenMayGoTo, TheRecordedAddressItself) {
  EXPECT_TRUE(token_may_go_to(url("127.0.0.1:7878"), "127.0.0.1:7878"));
  EXPECT_TRUE(token_may_go_to(url("192.168.1.5:7878"), "192.168.1.5:7878"));
  EXPECT_TRUE(token_may_go_to(url("[::1]:7878"), "[::1]:7878"));
  EXPECT_TRUE(token_may_go_to(url("[FE80::1]:7878"), "[fe80::1]:7878"));
}

// Found by review: 127.0.0.1's token went to localhost and [::1], where curl may connect
// first and where another user of the machine may listen on the same port.
TEST(TokenMayGoTo, ALoopbackListenerByItsOwnAddressOnly) {
  EXPECT_TRUE(token_may_go_to(url("127.0.0.1:7878"), "127.0.0.1:7878"));
  EXPECT_TRUE(token_may_go_to(url("[::1]:7878"), "[::1]:7878"));
  for (const char* name : {"localhost:7878", "LocalHost:7878", "[::1]:7878"}) {
    EXPECT_FALSE(token_may_go_to(url(name), "127.0.0.1:7878")) << name;
  }
  for (const char* name : {"localhost:7878", "127.0.0.1:7878"}) {
    EXPECT_FALSE(token_may_go_to(url(name), "[::1]:7878")) << name;
  }
  EXPECT_FALSE(token_may_go_to(url("127.0.0.2:7878"), "127.0.0.1:7878"));
  EXPECT_FALSE(token_may_go_to(url("localhost.evil.example:7878"), "127.0.0.1:7878"));
}

TEST(TokenMayGoTo, AWildcardListenerByItsFamilysLoopbackOnly) {
  EXPECT_TRUE(token_may_go_to(url("127.0.0.1:7878"), "0.0.0.0:7878"));
  EXPECT_FALSE(token_may_go_to(url("[::1]:7878"), "0.0.0.0:7878"));
  EXPECT_TRUE(token_may_go_to(url("[::1]:7878"), "[::]:7878"));
  EXPECT_FALSE(token_may_go_to(url("127.0.0.1:7878"), "[::]:7878"));
  for (const char* listen : {"0.0.0.0:7878", "[::]:7878"}) {
    EXPECT_FALSE(token_may_go_to(url("localhost:7878"), listen)) << listen;
    // The machine's own name or address may be another machine's from where the user is:
    // the token is passed by hand then.
    EXPECT_FALSE(token_may_go_to(url("gpubox:7878"), listen)) << listen;
    EXPECT_FALSE(token_may_go_to(url("10.0.0.7:7878"), listen)) << listen;
  }
}

TEST(TokenMayGoTo, NotToAnotherHost) {
  EXPECT_FALSE(token_may_go_to(url("evil.example:7878"), "127.0.0.1:7878"));
  EXPECT_FALSE(token_may_go_to(url("evil.example:80"), "127.0.0.1:7878"));
  EXPECT_FALSE(token_may_go_to(url("localhost:7878"), "192.168.1.5:7878"));  // not on loopback
  EXPECT_FALSE(token_may_go_to(url("192.168.1.6:7878"), "192.168.1.5:7878"));
}

TEST(TokenMayGoTo, NotToAnotherPort) {
  EXPECT_FALSE(token_may_go_to(url("127.0.0.1:7879"), "127.0.0.1:7878"));
  EXPECT_FALSE(token_may_go_to(url("localhost:7879"), "0.0.0.0:7878"));
  EXPECT_FALSE(token_may_go_to(url("127.0.0.1"), "127.0.0.1:7878"));  // port 80
  EXPECT_TRUE(token_may_go_to(url("127.0.0.1"), "127.0.0.1:80"));
  EXPECT_FALSE(token_may_go_to(url("127.0.0.1:"), "127.0.0.1:7878"));
  EXPECT_FALSE(token_may_go_to(url("127.0.0.1:7878x"), "127.0.0.1:7878"));
  EXPECT_FALSE(token_may_go_to(url("::1:7878"), "[::1]:7878"));  // IPv6 without brackets
}

TEST(TokenMayGoTo, NotOverHttps) {
  EXPECT_FALSE(
      token_may_go_to(DaemonUrl{"https://127.0.0.1:7878", "127.0.0.1:7878"}, "127.0.0.1:7878"));
}

TEST(TokenMayGoTo, NowhereWithoutARecord) {
  EXPECT_FALSE(token_may_go_to(url("127.0.0.1:7878"), ""));
  EXPECT_FALSE(token_may_go_to(url("127.0.0.1:7878"), "garbage"));
}

TEST(TokenWithheldReason, NamesTheFileTheAddressesAndTheWayAround) {
  HomeLayout home{"/h"};
  std::string other = token_withheld_reason(url("evil.example:80"), "127.0.0.1:7878", home);
  EXPECT_NE(other.find("/h/token"), std::string::npos) << other;
  EXPECT_NE(other.find("made for the daemon at 127.0.0.1:7878 and is not sent to evil.example:80"),
            std::string::npos)
      << other;
  EXPECT_NE(other.find("$GPUQ_TOKEN"), std::string::npos) << other;
  std::string none = token_withheld_reason(url("127.0.0.1:7878"), "", home);
  EXPECT_NE(none.find("/h/token.listen"), std::string::npos) << none;
  EXPECT_NE(none.find("$GPUQ_TOKEN if 127.0.0.1:7878 is that daemon"), std::string::npos) << none;
}

}  // namespace
}  // namespace gpuq::cli
