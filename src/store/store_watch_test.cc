// SPDX-License-Identifier: Apache-2.0
// Open episodes survive closing and reopening the store; an ended one is gone.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "store/store.h"
#include "store/store_fixture.h"

namespace gpuq::store {
namespace {

TEST(WatchEpisodes, SurviveReopeningAndEndedOnesAreForgotten) {
  auto dir = std::filesystem::temp_directory_path() / ("gpuq-episodes-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string path = (dir / "gpuq.db").string();
  {
    auto store = Store::open(path, false);
    ASSERT_TRUE(store) << store.error().message;
    ASSERT_TRUE((*store)->transaction([&]() -> Status {
      if (auto st = (*store)->put_episode({"job.quiet:3", "job.quiet", 10, 20, R"({"job":3})"}); !st) return st;
      if (auto st = (*store)->put_episode({"queue.empty", "queue.empty", 5, 5, "{}"}); !st) return st;
      // A repeat replaces the row.
      return (*store)->put_episode({"job.quiet:3", "job.quiet", 10, 90, R"({"job":3})"});
    }));
    ASSERT_TRUE((*store)->transaction([&] { return (*store)->delete_episode("queue.empty"); }));
  }
  auto reopened = Store::open(path, true);
  ASSERT_TRUE(reopened) << reopened.error().message;
  auto episodes = (*reopened)->episodes();
  ASSERT_TRUE(episodes) << episodes.error().message;
  ASSERT_EQ(episodes->size(), 1u);
  EXPECT_EQ((*episodes)[0].key, "job.quiet:3");
  EXPECT_EQ((*episodes)[0].kind, "job.quiet");
  EXPECT_EQ((*episodes)[0].since_ms, 10);
  EXPECT_EQ((*episodes)[0].reported_ms, 90);
  EXPECT_EQ((*episodes)[0].data, R"({"job":3})");
  reopened->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpuq::store

namespace gpuq::store {
namespace {

using StoreFixtureForText = testing::StoreFixture;

// A REQUIRES test's stderr cut mid-character, or a foreign process's command line, is not
// UTF-8: appending it must not throw (it used to end the daemon); the bytes are replaced.
TEST_F(StoreFixtureForText, EventDataThatIsNotUtf8IsStoredWithReplacements) {
  Event event;
  event.time_ms = 1;
  event.kind = "job.requires_wait";
  event.data = {{"why", std::string("caf\xc3", 4)}};
  ASSERT_TRUE(store_->transaction([&]() -> Status { return store_->append_event(event).has_value() ? ok() : fail(Code::kInternal, "append"); }));
  auto events = store_->events_after(0, 10);
  ASSERT_TRUE(events) << events.error().message;
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].data["why"], "caf\xef\xbf\xbd");
}

}  // namespace
}  // namespace gpuq::store
