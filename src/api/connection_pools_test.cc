// SPDX-License-Identifier: Apache-2.0
#include "api/connection_pools.h"

#include <gtest/gtest.h>

#include <vector>

namespace gpuq::api {
namespace {

using C = ConnectionClass;

ConnectionCaps small_caps() {
  ConnectionCaps caps;
  caps.unix_total = 6;
  caps.unix_per_uid = 4;
  caps.tcp_anonymous = 3;
  caps.tcp_authenticated = 2;
  caps.event_streams = 1;
  return caps;
}

TEST(ConnectionPools, AFullPoolDisplacesItsOldestIdleConnection) {
  ConnectionPools pools(small_caps());
  std::vector<ConnectionPools::Id> ids;
  for (int i = 0; i < 3; ++i) {
    auto a = pools.admit(C::kTcpAnonymous);
    ASSERT_TRUE(a.admitted());
    EXPECT_FALSE(a.displaced);
    ids.push_back(a.id);
  }
  pools.set_idle(ids[0], false);  // reading a body or in a handler: not displaced
  auto fourth = pools.admit(C::kTcpAnonymous);
  ASSERT_TRUE(fourth.admitted());
  ASSERT_TRUE(fourth.displaced);
  EXPECT_EQ(*fourth.displaced, ids[1]) << "the oldest idle one, not the busy oldest";
  EXPECT_FALSE(pools.class_of(ids[1]));
  EXPECT_EQ(pools.counts(C::kTcpAnonymous).open, 3);
  EXPECT_EQ(pools.counts(C::kTcpAnonymous).displaced, 1);
  EXPECT_EQ(pools.counts(C::kTcpAnonymous).refused, 0);
}

TEST(ConnectionPools, AFullPoolOfBusyConnectionsRefuses) {
  ConnectionPools pools(small_caps());
  for (int i = 0; i < 3; ++i) pools.set_idle(pools.admit(C::kTcpAnonymous).id, false);
  auto refused = pools.admit(C::kTcpAnonymous);
  EXPECT_FALSE(refused.admitted());
  EXPECT_FALSE(refused.displaced);
  EXPECT_EQ(pools.counts(C::kTcpAnonymous).refused, 1);
  EXPECT_EQ(pools.counts(C::kTcpAnonymous).open, 3);
}

TEST(ConnectionPools, PoolsNeverShareACap) {
  ConnectionPools pools(small_caps());
  for (int i = 0; i < 3; ++i) pools.set_idle(pools.admit(C::kTcpAnonymous).id, false);
  for (int i = 0; i < 2; ++i) {
    auto a = pools.admit(C::kTcpAnonymous);
    EXPECT_FALSE(a.admitted());
  }
  // The unix socket still has every place.
  for (int i = 0; i < 4; ++i) {
    auto a = pools.admit(C::kUnix, 1000);
    ASSERT_TRUE(a.admitted());
    EXPECT_FALSE(a.displaced);
  }
  EXPECT_EQ(pools.counts(C::kUnix).refused, 0);
}

TEST(ConnectionPools, AUidAtItsShareMakesRoomOnlyAmongItsOwn) {
  ConnectionPools pools(small_caps());
  std::vector<ConnectionPools::Id> mine;
  for (int i = 0; i < 4; ++i) mine.push_back(pools.admit(C::kUnix, 1000).id);
  auto other = pools.admit(C::kUnix, 0);
  ASSERT_TRUE(other.admitted());
  EXPECT_FALSE(other.displaced) << "the total has room for another uid";
  auto fifth = pools.admit(C::kUnix, 1000);
  ASSERT_TRUE(fifth.admitted());
  ASSERT_TRUE(fifth.displaced);
  EXPECT_EQ(*fifth.displaced, mine[0]) << "its own oldest idle connection, not root's";
  EXPECT_EQ(pools.open_for_uid(1000), 4);
  EXPECT_EQ(pools.open_for_uid(0), 1);
  // With all of its own busy, it is refused although the total has room.
  for (size_t i = 1; i < mine.size(); ++i) pools.set_idle(mine[i], false);
  pools.set_idle(fifth.id, false);
  EXPECT_FALSE(pools.admit(C::kUnix, 1000).admitted());
  EXPECT_TRUE(pools.admit(C::kUnix, 0).admitted());
  EXPECT_EQ(pools.counts(C::kUnix).refused, 1);
}

TEST(ConnectionPools, AFullTotalDisplacesTheOldestIdleOfAnyUid) {
  ConnectionCaps caps = small_caps();
  caps.unix_total = 4;
  caps.unix_per_uid = 3;
  ConnectionPools pools(caps);
  auto root_first = pools.admit(C::kUnix, 0);
  for (int i = 0; i < 3; ++i) pools.set_idle(pools.admit(C::kUnix, 1000).id, false);
  auto second_root = pools.admit(C::kUnix, 0);
  ASSERT_TRUE(second_root.admitted());
  ASSERT_TRUE(second_root.displaced);
  EXPECT_EQ(*second_root.displaced, root_first.id);
}

TEST(ConnectionPools, TheTokenMovesAConnectionToTheAuthenticatedPool) {
  ConnectionPools pools(small_caps());
  auto a = pools.admit(C::kTcpAnonymous);
  auto moved = pools.move(a.id, C::kTcpAuthenticated);
  ASSERT_TRUE(moved.admitted());
  EXPECT_EQ(moved.id, a.id);
  EXPECT_EQ(pools.class_of(a.id), C::kTcpAuthenticated);
  EXPECT_EQ(pools.counts(C::kTcpAnonymous).open, 0);
  EXPECT_EQ(pools.counts(C::kTcpAuthenticated).open, 1);
  // Moving into the class it is in changes nothing.
  EXPECT_TRUE(pools.move(a.id, C::kTcpAuthenticated).admitted());
  EXPECT_EQ(pools.counts(C::kTcpAuthenticated).open, 1);
}

TEST(ConnectionPools, AMoveIntoAFullPoolDisplacesOrIsRefused) {
  ConnectionPools pools(small_caps());
  auto s1 = pools.admit(C::kUnix, 1000);
  ASSERT_TRUE(pools.move(s1.id, C::kEventStream).admitted());
  auto s2 = pools.admit(C::kUnix, 1000);
  auto refused = pools.move(s2.id, C::kEventStream);
  EXPECT_FALSE(refused.admitted()) << "a stream is never idle: the stream pool refuses";
  EXPECT_EQ(pools.class_of(s2.id), C::kUnix) << "a refused move leaves it where it was";
  EXPECT_EQ(pools.counts(C::kEventStream).refused, 1);
  EXPECT_EQ(pools.counts(C::kUnix).open, 1);

  auto t1 = pools.admit(C::kTcpAnonymous);
  auto t2 = pools.admit(C::kTcpAnonymous);
  auto t3 = pools.admit(C::kTcpAnonymous);
  ASSERT_TRUE(pools.move(t1.id, C::kTcpAuthenticated).admitted());
  ASSERT_TRUE(pools.move(t2.id, C::kTcpAuthenticated).admitted());
  pools.set_idle(t1.id, true);  // between two requests of a keep-alive connection
  auto third = pools.move(t3.id, C::kTcpAuthenticated);
  ASSERT_TRUE(third.admitted());
  ASSERT_TRUE(third.displaced);
  EXPECT_EQ(*third.displaced, t1.id);
  EXPECT_EQ(pools.counts(C::kTcpAuthenticated).open, 2);
  EXPECT_EQ(pools.counts(C::kTcpAnonymous).open, 0);
}

TEST(ConnectionPools, AConnectionNeverDisplacesItself) {
  ConnectionCaps caps = small_caps();
  caps.tcp_authenticated = 1;
  ConnectionPools pools(caps);
  auto a = pools.admit(C::kTcpAnonymous);
  ASSERT_TRUE(pools.move(a.id, C::kTcpAuthenticated).admitted());
  pools.set_idle(a.id, true);
  auto b = pools.admit(C::kTcpAnonymous);
  auto moved = pools.move(b.id, C::kTcpAuthenticated);
  ASSERT_TRUE(moved.displaced);
  EXPECT_EQ(*moved.displaced, a.id);
}

TEST(ConnectionPools, ReleaseFreesThePlaceAndTheUidsShare) {
  ConnectionPools pools(small_caps());
  std::vector<ConnectionPools::Id> ids;
  for (int i = 0; i < 4; ++i) {
    ids.push_back(pools.admit(C::kUnix, 1000).id);
    pools.set_idle(ids.back(), false);
  }
  EXPECT_FALSE(pools.admit(C::kUnix, 1000).admitted());
  pools.release(ids[2]);
  pools.release(ids[2]);  // twice: nothing more
  EXPECT_EQ(pools.open_for_uid(1000), 3);
  auto again = pools.admit(C::kUnix, 1000);
  EXPECT_TRUE(again.admitted());
  EXPECT_FALSE(again.displaced);
  EXPECT_EQ(pools.counts(C::kUnix).open, 4);
}

TEST(ConnectionPools, CapsFitTheDescriptorLimit) {
  ConnectionCaps caps;
  caps.unix_total = 512;
  caps.unix_per_uid = 256;
  caps.tcp_anonymous = 32;
  caps.tcp_authenticated = 128;
  caps.event_streams = 64;
  ConnectionCaps roomy = fit_to_descriptors(caps, 1 << 20, 256);
  EXPECT_EQ(roomy.total(), caps.total());
  EXPECT_EQ(roomy.unix_per_uid, 256);
  // A shell's usual 1024 leaves 768: they fit as they are.
  EXPECT_EQ(fit_to_descriptors(caps, 1024, 256).total(), caps.total());
  // 512 leaves 256: each class shrunk alike, the share still half.
  ConnectionCaps tight = fit_to_descriptors(caps, 512, 256);
  EXPECT_LE(tight.total(), 256);
  EXPECT_EQ(tight.unix_total, 178);
  EXPECT_EQ(tight.unix_per_uid, 89);
  EXPECT_EQ(tight.tcp_anonymous, 11);
  EXPECT_EQ(tight.tcp_authenticated, 44);
  EXPECT_EQ(tight.event_streams, 22);
  // Far too few: every class keeps a few places.
  ConnectionCaps starved = fit_to_descriptors(caps, 100, 256);
  EXPECT_EQ(starved.unix_total, 8);
  EXPECT_EQ(starved.unix_per_uid, 4);
  EXPECT_EQ(starved.tcp_anonymous, 4);
  EXPECT_EQ(starved.tcp_authenticated, 4);
  EXPECT_EQ(starved.event_streams, 2);
}

TEST(ConnectionPools, ClassNames) {
  EXPECT_EQ(connection_class_name(C::kUnix), "unix");
  EXPECT_EQ(connection_class_name(C::kTcpAnonymous), "tcp_anonymous");
  EXPECT_EQ(connection_class_name(C::kTcpAuthenticated), "tcp_authenticated");
  EXPECT_EQ(connection_class_name(C::kEventStream), "event_streams");
}

}  // namespace
}  // namespace gpuq::api

namespace gpuq::api {
namespace {

TEST(RefusalAlarm, TheFirstRefusalIsToldAtOnceThenAtMostOnceAnInterval) {
  constexpr int64_t kWall = 1'764'000'000'000;  // the epoch time at steady time 0
  ConnectionCaps caps = small_caps();
  ConnectionPools pools(caps);
  RefusalAlarm alarm(60'000);
  EXPECT_FALSE(alarm.check(1'000, kWall + 1'000, pools).event) << "nothing happened yet";
  EXPECT_FALSE(alarm.check(1'000, kWall + 1'000, pools).next_ms);

  auto a = pools.admit(C::kEventStream);
  pools.set_idle(a.id, false);
  ASSERT_FALSE(pools.admit(C::kEventStream).admitted());
  auto first = alarm.check(2'000, kWall + 2'000, pools);
  ASSERT_TRUE(first.event);
  EXPECT_EQ((*first.event)["refused"], 1);
  EXPECT_EQ((*first.event)["displaced"], 0);
  EXPECT_EQ((*first.event)["classes"]["event_streams"],
            (nlohmann::json{{"refused", 1}, {"displaced", 0}, {"open", 1}, {"limit", 1}}));
  EXPECT_FALSE((*first.event)["classes"].contains("unix"));
  EXPECT_FALSE(first.event->contains("since_ms"));
  EXPECT_EQ(first.next_ms, 62'000);

  // Within the interval: counted, not told; the check asks to be called at its end.
  for (int i = 0; i < 3; ++i) pools.admit(C::kEventStream);
  for (int i = 0; i < 4; ++i) pools.admit(C::kTcpAnonymous);  // the fourth displaces one
  auto quiet = alarm.check(30'000, kWall + 30'000, pools);
  EXPECT_FALSE(quiet.event);
  EXPECT_EQ(quiet.next_ms, 62'000);

  auto second = alarm.check(62'000, kWall + 62'000, pools);
  ASSERT_TRUE(second.event);
  EXPECT_EQ((*second.event)["refused"], 3);
  EXPECT_EQ((*second.event)["displaced"], 1);
  EXPECT_EQ((*second.event)["classes"]["tcp_anonymous"]["displaced"], 1);
  EXPECT_EQ((*second.event)["since_ms"], kWall + 2'000);  // epoch time, as every _ms field
  EXPECT_EQ(second.next_ms, 122'000);

  // Nothing since: the timer's check tells nothing and asks for no other.
  auto idle = alarm.check(122'000, kWall + 122'000, pools);
  EXPECT_FALSE(idle.event);
  EXPECT_FALSE(idle.next_ms);
}

}  // namespace
}  // namespace gpuq::api
