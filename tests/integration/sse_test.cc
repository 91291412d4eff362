// SPDX-License-Identifier: Apache-2.0
// GET /v1/events/stream end to end: the backlog, live events, and resuming with Last-Event-ID,
// checked against `gpuq events --json`.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
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

// A client that stops reading (a stopped `curl -N`) is dropped once a write has waited for the
// stream's write deadline (20 s), instead of holding its socket and coroutine for ever.
TEST(Sse, StalledReaderIsDropped) {
  Harness h("fake:1");
  h.start();
  // Enough events to fill both ends' socket buffers: a plan of held jobs.
  nlohmann::json plan = {{"jobs", nlohmann::json::array()}};
  for (int i = 0; i < 4000; ++i) {
    plan["jobs"].push_back({{"id", "held-job-with-a-long-name-" + std::to_string(i)},
                            {"argv", {"true"}},
                            {"hold", true}});
  }
  std::ofstream(h.path("plan.json")) << plan.dump();
  ASSERT_EQ(h.gpuq({"submit", h.path("plan.json")}).status, 0);

  // A raw client: it sends its request and then reads nothing.
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::string socket = h.home() + "/gpuq.sock";
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", socket.c_str());
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  std::string request = "GET /v1/events/stream HTTP/1.1\r\nHost: gpuq\r\n\r\n";
  ASSERT_EQ(::write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  // Wait, without reading (that would unstall the stream), until the daemon hangs up: after
  // the write deadline, or never when a stalled reader is kept.
  pollfd hangup{fd, POLLRDHUP, 0};
  ASSERT_EQ(::poll(&hangup, 1, 120'000), 1)
      << "the stream to a stalled reader was not ended in 120 s";
  EXPECT_NE(hangup.revents & (POLLRDHUP | POLLHUP), 0) << "revents " << hangup.revents;

  // Now read: what the daemon had written, then the end of the stream.
  bool ended = false;
  size_t bytes = 0;
  char buffer[1 << 16];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 10'000) <= 0) break;
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) {
      ended = n == 0 || errno == ECONNRESET;
      break;
    }
    bytes += static_cast<size_t>(n);
  }
  ::close(fd);
  EXPECT_TRUE(ended) << "the stream to a stalled reader was not ended (" << bytes << " bytes read)";
  EXPECT_GT(bytes, 0u);
  // The daemon still serves everyone else.
  EXPECT_EQ(h.gpuq({"check"}).status, 0);
}

}  // namespace
}  // namespace gpuq::testing
