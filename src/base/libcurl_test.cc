// SPDX-License-Identifier: Apache-2.0
// The libcurl loader against the real library (libcurl4 is installed wherever gpuq is built)
// and against a library name that is not there, for the message a user without it sees.
#include "base/libcurl.h"

#include <gtest/gtest.h>

namespace gpuq {
namespace {

TEST(Libcurl, LoadsEveryFunctionGpuqCalls) {
  auto api = curl_api();
  ASSERT_TRUE(api) << api.error().message;
  EXPECT_EQ(curl_api().value(), *api);  // loaded once
  CURL* handle = (*api)->easy_init();
  ASSERT_NE(handle, nullptr);
  char* escaped = (*api)->easy_escape(handle, "a b/c", 0);
  EXPECT_STREQ(escaped, "a%20b%2Fc");
  (*api)->free(escaped);
  (*api)->easy_cleanup(handle);
  EXPECT_EQ((*api)->getdate("Tue, 01 Dec 2026 21:45:45 GMT", nullptr), 1796161545);
}

TEST(Libcurl, AMissingLibraryNamesItsDebianPackage) {
  auto api = load_curl("libgpuq-test-absent.so.4");
  ASSERT_FALSE(api);
  EXPECT_EQ(api.error().code, Code::kUnavailable);
  EXPECT_TRUE(api.error().message.starts_with(
      "libcurl is needed here (webhooks, S3 fleets, gpuq --url) but libgpuq-test-absent.so.4 "
      "could not be loaded: "))
      << api.error().message;
  EXPECT_TRUE(api.error().message.ends_with("Install it: apt-get install libcurl4"))
      << api.error().message;
}

TEST(Libcurl, ALibraryWithoutCurlsFunctionsIsRefused) {
  // libc is there on every machine and has none of them.
  auto api = load_curl("libc.so.6");
  ASSERT_FALSE(api);
  EXPECT_NE(api.error().message.find("it has no curl_easy_init"), std::string::npos)
      << api.error().message;
}

}  // namespace
}  // namespace gpuq
