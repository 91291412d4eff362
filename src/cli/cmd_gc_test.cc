// SPDX-License-Identifier: Apache-2.0
// `gpuq gc` against a scripted daemon (FakeTransport): what it sends and how it reads the
// answer of POST /v1/gc (docs/api.md).
#include <gtest/gtest.h>

#include "cli/commands.h"
#include "cli/fake_transport.h"
#include "cli/format.h"

namespace gpuq::cli {
namespace {

using testing::json_answer;

class GcCommand : public testing::ScriptedCli {};

constexpr const char* kRemoved =
    R"({"dry_run":false,"keep":"30d","cutoff":"2026-10-30T10:55:36.123Z","jobs":1204,)"
    R"("job_ids":[1,2,3],"runs":1310,"events":9871,"run_dirs":1310,"bytes":2254857830,)"
    R"("kept_for_dependents":3})";

TEST_F(GcCommand, PostsAndSaysWhatWasRemoved) {
  script({{"/v1/gc", json_answer(200, kRemoved)}});
  EXPECT_EQ(run({"gc"}), kExitOk);
  EXPECT_EQ(out(),
            "removed 1,204 finished jobs (older than 30d, finished before "
            "2026-10-30T10:55:36.123Z): 1,310 runs, 9,871 events, 1,310 run directories, 2.1 GiB\n"
            "kept 3 finished jobs that unfinished jobs depend on\n");
  EXPECT_EQ(err(), "");
  ASSERT_EQ(process_.daemon.requests.size(), 1u);
  EXPECT_EQ(process_.daemon.requests[0].method, Method::kPost);
  EXPECT_EQ(sent_body(), Json::parse(R"({"dry_run":false})"));
  EXPECT_EQ(process_.daemon.requests[0].timeout, kGcTimeout);
}

TEST_F(GcCommand, DryRunAsksAndSaysWhatWouldGoWithTheIds) {
  script({{"/v1/gc",
           json_answer(200, R"({"dry_run":true,"keep":"7d","cutoff":"2026-11-22T10:55:36.123Z",)"
                            R"("jobs":1,"job_ids":[42],"runs":2,"events":7,"run_dirs":2,)"
                            R"("bytes":1536,"kept_for_dependents":0})")}});
  EXPECT_EQ(run({"gc", "--dry-run"}), kExitOk);
  EXPECT_EQ(sent_body(), Json::parse(R"({"dry_run":true})"));
  EXPECT_EQ(out(),
            "would remove 1 finished job (older than 7d, finished before "
            "2026-11-22T10:55:36.123Z): 2 runs, 7 events, 2 run directories, 1.5 KiB\n"
            "job 42\n");
}

TEST_F(GcCommand, DryRunListsTheFirstIdsAndHowManyMore) {
  script({{"/v1/gc", json_answer(200, R"({"dry_run":true,"keep":"30d","cutoff":"C","jobs":1204,)"
                                      R"("job_ids":[5,6],"runs":0,"events":0,"run_dirs":0,)"
                                      R"("bytes":0,"kept_for_dependents":0})")}});
  EXPECT_EQ(run({"gc", "--dry-run"}), kExitOk);
  EXPECT_TRUE(out().ends_with("\njobs 5, 6 and 1,202 more\n")) << out();
}

TEST_F(GcCommand, NothingToRemove) {
  script({{"/v1/gc", json_answer(200, R"({"dry_run":false,"keep":"30d","cutoff":"C","jobs":0,)"
                                      R"("job_ids":[],"runs":0,"events":0,"run_dirs":0,"bytes":0,)"
                                      R"("kept_for_dependents":2})")}});
  EXPECT_EQ(run({"gc"}), kExitOk);
  EXPECT_EQ(out(),
            "nothing to remove (no finished job older than 30d, finished before C)\n"
            "kept 2 finished jobs that unfinished jobs depend on\n");
}

TEST_F(GcCommand, KeepForeverAndHooksThatHoldJobsBackAreSaid) {
  script({{"/v1/gc", json_answer(200, R"({"dry_run":false,"keep":"forever","cutoff":null,"jobs":0,)"
                                      R"("job_ids":[],"runs":0,"events":0,"run_dirs":0,"bytes":0,)"
                                      R"("kept_for_dependents":0,"waiting_for_hooks":false})")}});
  EXPECT_EQ(run({"gc"}), kExitOk);
  EXPECT_EQ(out(), "nothing is pruned: [retention] keep is \"forever\" in the daemon's config.toml\n");
  process_.out.str("");
  script({{"/v1/gc", json_answer(200, R"({"dry_run":false,"keep":"1d","cutoff":"2026-11-30T00:00:00.000Z",)"
                                      R"("jobs":0,"job_ids":[],"runs":0,"events":0,"run_dirs":0,)"
                                      R"("bytes":0,"kept_for_dependents":0,"waiting_for_hooks":true})")}});
  EXPECT_EQ(run({"gc"}), kExitOk);
  EXPECT_EQ(out(),
            "nothing to remove (no finished job older than 1d, finished before 2026-11-30T00:00:00.000Z)\n"
            "kept finished jobs whose events an event hook has not delivered yet (gpuq hooks)\n");
}

TEST_F(GcCommand, JsonIsTheDaemonsAnswer) {
  script({{"/v1/gc", json_answer(200, kRemoved)}});
  EXPECT_EQ(run({"gc", "--json", "--dry-run"}), kExitOk);
  EXPECT_EQ(out(), std::string(kRemoved) + "\n");
  EXPECT_EQ(sent_body(), Json::parse(R"({"dry_run":true})"));
}

TEST_F(GcCommand, TheDaemonsErrorIsShownAndExitsOne) {
  script({{"/v1/gc",
           json_answer(409, R"({"error":{"code":"conflict","message":"a prune is already running"}})")}});
  EXPECT_EQ(run({"gc"}), kExitFailed);
  EXPECT_EQ(err(), "gpuq: a prune is already running\n");
  EXPECT_EQ(out(), "");
}

TEST_F(GcCommand, ExtraArgumentsAreAUsageError) {
  expect_usage_error({"gc", "now"}, "now");
}

TEST(Format, CountsAndBytesForPeople) {
  EXPECT_EQ(format_count(0), "0");
  EXPECT_EQ(format_count(999), "999");
  EXPECT_EQ(format_count(1000), "1,000");
  EXPECT_EQ(format_count(1234567), "1,234,567");
  EXPECT_EQ(format_count(-1204), "-1,204");
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1.0 KiB");
  EXPECT_EQ(format_bytes(5 * 1024 * 1024 + 512 * 1024), "5.5 MiB");
  EXPECT_EQ(format_bytes(int64_t{3} << 40), "3.0 TiB");
  EXPECT_EQ(format_bytes(int64_t{5000} << 40), "5000.0 TiB");
  EXPECT_EQ(count_of(1, "run", "runs"), "1 run");
  EXPECT_EQ(count_of(1310, "run", "runs"), "1,310 runs");
}

}  // namespace
}  // namespace gpuq::cli
