// GET /v1/events/stream end to end: the backlog, live events, and resuming with Last-Event-ID,
// checked against `gpuq events --json`.
#include <atomic>
#include <thread>
#include <gtest/gtest.h>

#include "harness.h"
#include "unix_http.h"

namespace gpuq::testing {
namespace {

// Each frame is the event of `gpuq events --json` with the same seq: id, kind and the whole
// object; and the ids run on without a gap or a repeat from `first`.
void expect_frames_match(const std::vector<SseFrame>& frames, const std::vector<nlohmann::json>& events,
                         long long first) {
  for (size_t i = 0; i < frames.size(); ++i) {
    const SseFrame& f = frames[i];
    ASSERT_EQ(f.id, first + static_cast<long long>(i)) << "frame " << i;
    ASSERT_LE(static_cast<size_t>(f.id), events.size());
    const auto& e = events[static_cast<size_t>(f.id) - 1];
    ASSERT_EQ(e["seq"], f.id);  // seqs in a fresh daemon's log run 1, 2, 3, ...
    EXPECT_EQ(f.event, e["kind"]);
    auto data = nlohmann::json::parse(f.data, nullptr, false);
    EXPECT_EQ(data, e) << f.data;
  }
}

TEST(Sse, Stream) {
  Harness h("fake:1");
  h.start();
  ASSERT_EQ(h.gpuq({"wait", std::to_string(h.submit_sh("true")), "--timeout", "60s"}).status, 0);
  ASSERT_EQ(h.gpuq({"wait", std::to_string(h.submit_sh("exit 2")), "--timeout", "60s"}).status, 1);
  auto backlog = h.events();
  ASSERT_GE(backlog.size(), 5u);
  long long last_backlog = backlog.back()["seq"];
  std::string socket = h.home() + "/gpuq.sock";

  // Connected before the job exists: its events arrive on the open stream.
  std::atomic<size_t> received{0};
  SseResult live;
  std::thread reader([&] {
    live = unix_sse(socket, "/v1/events/stream", {}, [&](const std::vector<SseFrame>& frames) {
      received = frames.size();
      return frames.back().id > last_backlog && frames.back().event == "job.succeeded";
    });
  });
  bool caught_up = wait_until([&] { return received >= backlog.size(); }, 60'000);
  int64_t late = caught_up ? h.submit_sh("true", {"--name", "late"}) : 0;
  reader.join();
  ASSERT_TRUE(caught_up);
  EXPECT_EQ(live.status, 200);
  EXPECT_EQ(live.content_type, "text/event-stream");
  ASSERT_GT(live.frames.size(), backlog.size());
  EXPECT_EQ(live.frames.back().id > last_backlog, true);
  auto events = h.events();
  expect_frames_match(live.frames, events, 1);
  bool saw_late = false;
  for (const auto& f : live.frames) {
    auto data = nlohmann::json::parse(f.data);
    saw_late |= f.event == "job.submitted" && data["job"] == late;
  }
  EXPECT_TRUE(saw_late);

  // Reconnecting with Last-Event-ID resumes right after it.
  long long k = last_backlog / 2;
  long long last = events.back()["seq"];
  auto resumed = unix_sse(socket, "/v1/events/stream", {"Last-Event-ID: " + std::to_string(k)},
                          [&](const std::vector<SseFrame>& frames) { return frames.back().id >= last; });
  ASSERT_FALSE(resumed.frames.empty());
  EXPECT_EQ(resumed.frames.front().id, k + 1);
  expect_frames_match(resumed.frames, events, k + 1);

  // ?after= is the cursor for a first connection.
  auto after = unix_sse(socket, "/v1/events/stream?after=" + std::to_string(last - 1), {},
                        [](const std::vector<SseFrame>&) { return true; });
  ASSERT_EQ(after.frames.size(), 1u);
  EXPECT_EQ(after.frames[0].id, last);

  // A cursor that is not a seq is refused, not read as 0.
  auto bad = unix_get(socket, "/v1/events/stream", {"Last-Event-ID: soon"});
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_NE(bad.body.find("invalid_argument"), std::string::npos) << bad.body;
}

}  // namespace
}  // namespace gpuq::testing
