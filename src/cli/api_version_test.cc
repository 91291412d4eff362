// SPDX-License-Identifier: Apache-2.0
// The CLI against a daemon of another API version (base/api_version.h): the daemon's
// `Gpuq-Api` header decides, before anything of its answer is read, and the message says which
// versions met and what to do. The daemon's own refusal of a client is tested against a real
// daemon (tests/integration/api_version_test.cc).
#include "base/api_version.h"

#include <gtest/gtest.h>

#include "cli/fake_transport.h"

namespace gpuq::cli {
namespace {

using testing::json_answer;

class ApiVersion : public testing::ScriptedCli {};

TEST(ApiVersionText, OnlyAWholeNumberFromOneIsAVersion) {
  EXPECT_EQ(parse_api_version("1"), 1);
  EXPECT_EQ(parse_api_version("12"), 12);
  for (std::string_view bad : {"", "0", "-1", "1.0", " 1", "1 ", "v1", "99999999999"}) {
    EXPECT_EQ(parse_api_version(bad), std::nullopt) << bad;
  }
}

TEST_F(ApiVersion, ADaemonOfAnotherVersionIsRefusedWithBothVersionsAndTheWayOut) {
  script({{"/v1/status?pending_limit=100&held_limit=100&arrays=collapse",
           json_answer(200, R"({"jobs":[],"gpus":[]})", {{"gpuq-api", "2"}})}});
  EXPECT_EQ(run({"status"}), kExitFailed);
  EXPECT_EQ(out(), "");
  EXPECT_EQ(err(),
            "gpuq: the daemon for /tmp/gpuq-fake-home speaks gpuq API 2 and this gpuq speaks API "
            "1: run the gpuq that matches the daemon (`gpuq --version` prints its API), or "
            "restart the daemon with this gpuq\n");
}

TEST_F(ApiVersion, AnErrorFromADaemonOfAnotherVersionIsReportedAsTheMismatch) {
  script({{"/v1/jobs/7/hold",
           json_answer(404, R"({"error":{"code":"not_found","message":"no job 7"}})",
                       {{"gpuq-api", "3"}})}});
  EXPECT_EQ(run({"hold", "7"}), kExitFailed);
  EXPECT_NE(err().find("speaks gpuq API 3 and this gpuq speaks API 1"), std::string::npos) << err();
  EXPECT_EQ(err().find("no job 7"), std::string::npos) << err();
}

TEST_F(ApiVersion, AVersionThatIsNoNumberIsQuotedAndRefused) {
  script({{"/v1/jobs/7/hold", json_answer(200, R"({"id":7})", {{"gpuq-api", "next"}})}});
  EXPECT_EQ(run({"hold", "7"}), kExitFailed);
  EXPECT_NE(err().find("speaks gpuq API 'next' and this gpuq speaks API 1"), std::string::npos)
      << err();
}

// A daemon of this version, or one from before versions were sent, is simply used.
TEST_F(ApiVersion, ThisVersionOrNoneIsUsed) {
  for (auto headers : {std::map<std::string, std::string>{{"gpuq-api", "1"}},
                       std::map<std::string, std::string>{}}) {
    process_.out.str("");
    script({{"/v1/jobs/7/hold",
             json_answer(200, R"({"id":7,"name":null,"state":"held","priority":50,"reason":""})",
                         headers)}});
    EXPECT_EQ(run({"hold", "7"}), kExitOk) << err();
    EXPECT_NE(out().find("7"), std::string::npos) << out();
  }
}

}  // namespace
}  // namespace gpuq::cli
