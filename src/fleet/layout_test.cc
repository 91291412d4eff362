// SPDX-License-Identifier: Apache-2.0
// The bucket's documents round-trip, queue entries sort best priority first then oldest, and
// names, ids and keys keep to the safe alphabet.
#include "fleet/layout.h"

#include <gtest/gtest.h>

#include "fleet/object_store.h"

namespace gpuq::fleet {
namespace {

TEST(FleetLayout, EntriesSortByPriorityThenAgeAndParseBack) {
  std::string high = entry_key(keys::class_queue("any"), 10, 900, new_job_id(900));
  std::string old_normal = entry_key(keys::class_queue("any"), 50, 100, new_job_id(100));
  std::string new_normal = entry_key(keys::class_queue("any"), 50, 200, new_job_id(200));
  EXPECT_LT(high, old_normal);
  EXPECT_LT(old_normal, new_normal);
  auto entry = parse_entry(keys::class_queue("any"), old_normal);
  ASSERT_TRUE(entry);
  EXPECT_EQ(entry->priority, 50);
  EXPECT_EQ(entry->submitted_ms, 100);
  EXPECT_FALSE(parse_entry(keys::class_queue("any"), "queues/class/any/junk"));
  EXPECT_TRUE(check_key(old_normal));
}

TEST(FleetLayout, IdsSortBySubmissionAndAreRecognised) {
  std::string a = new_job_id(1'700'000'000'000), b = new_job_id(1'700'000'000'001);
  EXPECT_LT(a.substr(0, 8), b.substr(0, 8));
  EXPECT_TRUE(looks_like_job_id(a));
  EXPECT_FALSE(looks_like_job_id("train-a15"));
  EXPECT_NE(new_job_id(5), new_job_id(5));
}

TEST(FleetLayout, NamesKeepToTheSafeAlphabet) {
  EXPECT_TRUE(check_name("name", "eval-a15.v2_x"));
  auto bad = check_name("node", "my node");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("node 'my node' is not valid"), std::string::npos);
  EXPECT_FALSE(check_name("class", ""));
  EXPECT_FALSE(check_name("class", "../x"));
}

TEST(FleetLayout, DocumentsRoundTrip) {
  FleetJob job;
  job.id = new_job_id(42);
  job.name = "train";
  job.node = "n1";
  job.submitted_ms = 42;
  job.spec.gpus = 2;
  job.spec.script_text = "#!/bin/bash\ntrue\n";
  job.spec.env = {{"SEED", "3"}};
  job.spec.inputs = {"data/x.json"};
  job.after = {{Dependency::Kind::kAfterAny, "prep"}};
  auto back = fleet_job_from_json(nlohmann::json::parse(to_json(job).dump()));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_TRUE(same_fleet_work(job, *back));
  EXPECT_EQ(back->entry(), job.entry());
  Claim claim;
  claim.job = job.id;
  claim.node = "n1";
  claim.attempt = 2;
  claim.token = random_token();
  claim.state = "failed";
  claim.exit_code = 3;
  auto claim_back = claim_from_json(to_json(claim));
  ASSERT_TRUE(claim_back);
  EXPECT_EQ(claim_back->exit_code, 3);
  EXPECT_EQ(claim_back->attempt, 2);
  EXPECT_FALSE(claim_from_json({{"job", "x"}, {"node", "n"}, {"attempt", 1}, {"token", "t"},
                                {"renewal", 0}, {"state", "dancing"}}));
  EXPECT_FALSE(parse_object("k", std::string(100, '[')));
}

}  // namespace
}  // namespace gpuq::fleet
