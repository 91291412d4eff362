// SPDX-License-Identifier: Apache-2.0
#include "app/fleet_view.h"

#include <gtest/gtest.h>

#include <thread>

#include "fleet/client.h"
#include "fleet/layout.h"
#include "fleet/testing/memory_store.h"

namespace gpuq::app {
namespace {

using namespace std::chrono_literals;

// Asks until the view has read the bucket once (or failed to); the reading happens on its
// thread after the first look.
nlohmann::json first_reading(FleetView& view) {
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    nlohmann::json seen = view.snapshot();
    if (!seen["as_of_ms"].is_null() || !seen["error"].is_null()) return seen;
    std::this_thread::sleep_for(5ms);
  }
  return view.snapshot();
}

TEST(FleetView, ShowsNodesAndQueuedJobsAfterTheFirstLook) {
  auto bucket = std::make_shared<fleet::testing::Bucket>();
  fleet::testing::MemoryStore writer(bucket);
  fleet::Heartbeat beat;
  beat.node = "box-b";
  beat.time_ms = bucket->now_ms;
  beat.gpus = {{"gpu0", "H100", 81559, true}};
  ASSERT_TRUE(writer.put(fleet::keys::heartbeat("box-b"), fleet::to_json(beat).dump()));
  fleet::FleetJob job;
  job.id = fleet::new_job_id(42);
  job.name = "train";
  job.klass = "any";
  job.submitted_ms = bucket->now_ms;
  job.spec.argv = {"true"};
  auto submitted = fleet::submit(writer, job);
  ASSERT_TRUE(submitted) << submitted.error().message;

  FleetView view(std::make_unique<fleet::testing::MemoryStore>(bucket), "s3://b/p", "box-a", 50ms);
  nlohmann::json seen = first_reading(view);
  ASSERT_TRUE(seen["error"].is_null()) << seen.dump();
  EXPECT_EQ(seen["url"], "s3://b/p");
  EXPECT_EQ(seen["node"], "box-a");
  ASSERT_EQ(seen["nodes"].size(), 1u) << seen.dump();
  EXPECT_EQ(seen["nodes"][0]["name"], "box-b");
  ASSERT_EQ(seen["jobs"].size(), 1u) << seen.dump();
  EXPECT_EQ(seen["jobs"][0]["id"], job.id);
  EXPECT_EQ(seen["jobs"][0]["state"], "queued");
  EXPECT_EQ(seen["jobs"][0]["class"], "any");
}

TEST(FleetView, AnUnreachableBucketIsReportedNotHidden) {
  auto bucket = std::make_shared<fleet::testing::Bucket>();
  bucket->unreachable = true;
  FleetView view(std::make_unique<fleet::testing::MemoryStore>(bucket), "s3://b", "box-a", 50ms);
  nlohmann::json seen = first_reading(view);
  EXPECT_TRUE(seen["as_of_ms"].is_null());
  ASSERT_TRUE(seen["error"].is_string()) << seen.dump();
  EXPECT_FALSE(seen["error"].get<std::string>().empty());
}

}  // namespace
}  // namespace gpuq::app
