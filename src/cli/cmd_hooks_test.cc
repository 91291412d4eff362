// SPDX-License-Identifier: Apache-2.0
// `gpuq hooks` against a scripted daemon: the table and --json.
#include <gtest/gtest.h>

#include "cli/commands.h"
#include "cli/fake_transport.h"

namespace gpuq::cli {
namespace {

using testing::json_answer;

class HooksCommand : public testing::ScriptedCli {};

// The fake clock reads 2026-11-29T10:55:36.123Z.
constexpr std::string_view kTwoHooks =
    R"({"hooks":[)"
    R"({"name":"slack","type":"url","target":"http://127.0.0.1:8080/gpuq","events":["job.*","queue.*"],)"
    R"("cursor":41,"last_seq":41,"lag":0,"delivered":17,"failures":0,)"
    R"("last_error":"event 12 (job.failed): POST answered HTTP 500: down",)"
    R"("last_error_at":"2026-11-29T10:52:36.123Z","failing_since":null,"retry_at":null},)"
    R"({"name":"log","type":"command","target":"cat >> /tmp/events.jsonl","events":["*"],)"
    R"("cursor":38,"last_seq":41,"lag":3,"delivered":30,"failures":2,)"
    R"("last_error":"event 39 (job.started): the command failed: exit status 1",)"
    R"("last_error_at":"2026-11-29T10:55:26.123Z","failing_since":"2026-11-29T10:55:20.000Z",)"
    R"("retry_at":"2026-11-29T10:55:38.123Z"}]})";

TEST_F(HooksCommand, ShowsCursorLagAndLastError) {
  script({{"/v1/hooks", json_answer(200, std::string(kTwoHooks))}});
  EXPECT_EQ(run({"hooks"}), 0);
  EXPECT_EQ(out(),
            "NAME   TARGET                             EVENTS         CURSOR  LAG  LAST ERROR\n"
            "slack  http://127.0.0.1:8080/gpuq         job.*,queue.*  41      0    3m00s ago: "
            "event 12 (job.failed): POST answered HTTP 500: down\n"
            "log    command: cat >> /tmp/events.jsonl  *              38      3    failing (2 "
            "tries), 10s ago: event 39 (job.started): the command failed:\u2026\n");
  EXPECT_EQ(err(), "");
}

TEST_F(HooksCommand, JsonPrintsTheDaemonsAnswer) {
  script({{"/v1/hooks", json_answer(200, std::string(kTwoHooks))}});
  EXPECT_EQ(run({"hooks", "--json"}), 0);
  EXPECT_EQ(out(), std::string(kTwoHooks) + "\n");
}

TEST_F(HooksCommand, NoHooksSaysHowToAddOne) {
  script({{"/v1/hooks", json_answer(200, R"({"hooks":[]})")}});
  EXPECT_EQ(run({"hooks"}), 0);
  EXPECT_EQ(out(), "no hooks; add [[hook]] tables to config.toml (docs/hooks.md)\n");
}

TEST_F(HooksCommand, NoDaemonExitsThree) {
  EXPECT_EQ(run({"hooks"}), kExitNoDaemon);
  EXPECT_NE(err().find("gpuq: "), std::string::npos) << err();
}

}  // namespace
}  // namespace gpuq::cli
