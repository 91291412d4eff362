// SPDX-License-Identifier: Apache-2.0
// Bad input gets a clear error, a non-zero status, and nothing queued.
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>
#include <optional>
#include <sys/socket.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "harness.h"
#include "unix_http.h"

namespace gpuq::testing {
namespace {

size_t job_count(const Harness& h) { return h.gpuq_json({"status", "--json"})["jobs"].size(); }

void expect_refused(const Harness& h, const std::vector<std::string>& args, const std::string& message) {
  auto r = h.gpuq(args);
  EXPECT_NE(r.status, 0) << "accepted: " << ::testing::PrintToString(args);
  EXPECT_NE(r.err.find(message), std::string::npos)
      << ::testing::PrintToString(args) << "\nstderr: " << r.err;
}

TEST(BadInput, ScriptsThatCannotRunAreRefused) {
  Harness h("fake:2");
  h.start();
  std::ofstream(h.path("empty.sh")) << "";
  std::ofstream(h.path("binary.sh"), std::ios::binary) << std::string("\x7f" "ELF\x02\x01\0\0\0", 9);
  std::filesystem::create_directory(h.path("adir"));
  expect_refused(h, {"submit", "missing.sh"}, "missing.sh: no such script");
  expect_refused(h, {"submit", "empty.sh"}, "script is empty");
  expect_refused(h, {"submit", "binary.sh"}, "binary");
  expect_refused(h, {"submit", "adir"}, "adir holds no job files (*.sh); nothing submitted");
  if (geteuid() != 0) {
    std::ofstream(h.path("secret.sh")) << "echo hi\n";
    chmod(h.path("secret.sh").c_str(), 0);
    expect_refused(h, {"submit", "secret.sh"}, "cannot read");
  }
  EXPECT_EQ(job_count(h), 0u);
}

TEST(BadInput, FlagsAndCountsAreChecked) {
  Harness h("fake:2");
  h.start();
  expect_refused(h, {"submit", "--gpus", "-1", "--", "true"}, "");
  expect_refused(h, {"submit", "--gpus", "3", "--", "true"}, "job asks for 3 GPUs; this machine has 2");
  expect_refused(h, {"submit", "--frobnicate", "--", "true"}, "frobnicate");
  expect_refused(h, {"submit", "--priority", "urgent", "--", "true"}, "bad priority");
  expect_refused(h, {"submit", "--cwd", "/no/such/dir", "--", "true"}, "/no/such/dir");
  expect_refused(h, {"submit"}, "");
  EXPECT_EQ(job_count(h), 0u);
  auto r = h.gpuq({"submit", "--gpus", "-1", "--", "true"});
  EXPECT_EQ(r.status, 2);  // usage error
}

TEST(BadInput, NoDaemonSaysHowToStartOne) {
  Harness h("fake:1");
  auto r = h.gpuq({"status"});
  EXPECT_EQ(r.status, 3);
  EXPECT_NE(r.err.find("gpuq daemon --detach"), std::string::npos) << r.err;
}

TEST(BadInput, ASecondDaemonOnTheSameHomeRefuses) {
  Harness h("fake:1");
  h.start();
  int pid = h.daemon_pid();
  auto r = h.gpuq({"daemon", "--gpus", "fake:1", "--http", "off"});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("already running"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(std::to_string(pid)), std::string::npos) << r.err;
  EXPECT_EQ(h.daemon_pid(), pid);
  EXPECT_EQ(h.gpuq({"status"}).status, 0);  // the first one still serves
}

TEST(BadInput, ANameIsUniqueUnlessTheSpecIsTheSame) {
  Harness h("fake:1");
  h.start();
  auto first = h.gpuq_json({"submit", "--json", "--name", "train", "--", "true"});
  auto same = h.gpuq_json({"submit", "--json", "--name", "train", "--", "true"});
  EXPECT_EQ(first["id"], same["id"]);  // idempotent
  expect_refused(h, {"submit", "--name", "train", "--", "false"}, "already exists");
  EXPECT_EQ(job_count(h), 1u);
}

}  // namespace
}  // namespace gpuq::testing

namespace gpuq::testing {
namespace {

TEST(BadInput, AHomeTooLongForAUnixSocketIsRefusedWithTheFix) {
  Harness h("fake:1");
  std::string home = h.work() + "/" + std::string(120, 'h');
  auto r = os::run_command({GPUQ_BINARY, "--home", home, "daemon", "--gpus", "fake:1", "--detach",
                            "--http", "off"},
                           Millis(30'000));
  ASSERT_TRUE(r);
  EXPECT_NE(r->exit_code, 0);
  EXPECT_NE(r->err.find("a unix socket path may have at most 107"), std::string::npos) << r->err;
  EXPECT_NE(r->err.find("use a shorter --home"), std::string::npos) << r->err;
}

}  // namespace
}  // namespace gpuq::testing

// Bad bytes on the API socket: every one gets an HTTP answer with a JSON error (or, for a
// connection that stalls, a close), and the daemon lives on.
namespace gpuq::testing {
namespace {

std::string socket_of(const Harness& h) { return h.home() + "/gpuq.sock"; }

std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// The answer is `status` with a JSON error of `code` whose message holds `text`.
void expect_json_error(const HttpAnswer& answer, long status, const std::string& code,
                       const std::string& text) {
  EXPECT_EQ(answer.curl_code, 0) << "no HTTP answer; body: " << answer.body.substr(0, 200);
  EXPECT_EQ(answer.status, status) << answer.body.substr(0, 300);
  EXPECT_EQ(answer.content_type, "application/json");
  auto body = nlohmann::json::parse(answer.body, nullptr, false);
  ASSERT_TRUE(body.is_object()) << answer.body.substr(0, 300);
  EXPECT_EQ(body["error"]["code"], code) << answer.body;
  EXPECT_NE(body["error"]["message"].get<std::string>().find(text), std::string::npos) << answer.body;
}

void expect_still_serving(const Harness& h) {
  auto status = h.gpuq({"status"});
  EXPECT_EQ(status.status, 0) << status.err;
}

TEST(BadInput, DeeplyNestedBodiesGet400AndTheDaemonLivesOn) {
  Harness h("fake:1");
  h.start();
  int pid = h.daemon_pid();
  // ~600 KB of nesting: a recursive dump() of it used to overflow the API thread's stack.
  auto in_object = unix_request(socket_of(h), "POST", "/v1/jobs/1/move", "{\"before\":" + nested(300'000) + "}");
  expect_json_error(in_object, 400, "invalid_argument", "more than 64 deep");
  auto bare = unix_request(socket_of(h), "POST", "/v1/jobs/1/move", nested(300'000));
  expect_json_error(bare, 400, "invalid_argument", "more than 64 deep");
  auto submit = unix_request(socket_of(h), "POST", "/v1/jobs", "{\"argv\":" + nested(300'000) + "}");
  expect_json_error(submit, 400, "invalid_argument", "more than 64 deep");
  EXPECT_EQ(h.daemon_pid(), pid);
  expect_still_serving(h);
}

TEST(BadInput, ABodyOverTheLimitGets413WithAJsonError) {
  Harness h("fake:1");
  h.start();
  std::string body = "{\"argv\":[\"" + std::string(8 << 20, 'x') + "\"]}";
  auto answer = unix_request(socket_of(h), "POST", "/v1/jobs", body);
  expect_json_error(answer, 413, "invalid_argument", "larger than 8 MiB");
  expect_still_serving(h);
  EXPECT_EQ(job_count(h), 0u);
}

TEST(BadInput, AHeaderOverTheLimitGets431WithAJsonError) {
  Harness h("fake:1");
  h.start();
  auto answer = unix_request(socket_of(h), "GET", "/v1/health", "", {"X-Big: " + std::string(17 << 10, 'a')});
  expect_json_error(answer, 431, "invalid_argument", "header is larger than 16 KiB");
  expect_still_serving(h);
}

TEST(BadInput, FieldsOfTheWrongTypeOrRangeGet400NamingTheField) {
  Harness h("fake:1");
  h.start();
  auto sock = socket_of(h);
  // nlohmann's value() threw type_error here, which dropped the connection unanswered.
  expect_json_error(unix_request(sock, "POST", "/v1/gpus/gpu0/release", R"({"attention":"yes"})"),
                    400, "invalid_argument", "field 'attention' must be true");
  std::string job = R"({"argv":["true"],"cwd":")" + h.work() + "\"";
  expect_json_error(unix_request(sock, "POST", "/v1/jobs", job + R"(,"not_before":"2400-01-01T00:00:00Z"})"),
                    400, "invalid_argument", "field 'not_before'");
  expect_json_error(unix_request(sock, "POST", "/v1/jobs", job + R"(,"timeout_ms":1000000000000000})"),
                    400, "invalid_argument", "field 'timeout_ms'");
  expect_json_error(unix_request(sock, "POST", "/v1/jobs", job + R"(,"env":{"A=B":"1"}})"),
                    400, "invalid_argument", "'A=B' contains '='");
  expect_json_error(unix_request(sock, "POST", "/v1/plans", R"({"jobs":[{"name":"a","argv":["true"]}],"replace":"yes"})"),
                    400, "invalid_argument", "field 'replace'");
  expect_json_error(unix_request(sock, "POST", "/v1/jobs/1/move", R"({"top":false})"),
                    400, "invalid_argument", "field 'top' must be true");
  expect_json_error(unix_request(sock, "GET", "/v1/events?after=abc", ""), 400, "invalid_argument",
                    "query parameter 'after'");
  EXPECT_EQ(job_count(h), 0u);
  expect_still_serving(h);
}


int64_t last_seq(const std::string& sock) {
  auto answer = unix_get(sock, "/v1/events?limit=0");
  return nlohmann::json::parse(answer.body).value("last_seq", int64_t{0});
}

TEST(BadInput, AConnectionThatStallsIsClosedButLongPollsAndStreamsStay) {
  ScopedEnv idle("GPUQ_TEST_IDLE_TIMEOUT_MS", "300");  // test-only: the default is 30 s
  Harness h("fake:1");
  h.start();
  auto sock = socket_of(h);
  int silent = unix_connect(sock);
  ASSERT_GE(silent, 0);
  EXPECT_TRUE(wait_closed_by_peer(silent)) << "a connection that sends nothing stays open";
  ::close(silent);
  int dribbler = unix_connect(sock);
  ASSERT_GE(dribbler, 0);
  ASSERT_EQ(::send(dribbler, "GET /v1/hea", 11, MSG_NOSIGNAL), 11);
  EXPECT_TRUE(wait_closed_by_peer(dribbler)) << "a request that never ends stays open";
  ::close(dribbler);

  // A long-poll waits five idle timeouts and is answered, not closed.
  int64_t seq = last_seq(sock);
  auto poll = unix_get(sock, fmt::format("/v1/events?after={}&wait_ms=1500", seq));
  EXPECT_EQ(poll.curl_code, 0);
  EXPECT_EQ(poll.status, 200) << poll.body;

  // A stream that has been quiet for longer than the idle timeout still gets the next event:
  // the long-poll in the other thread lasts five idle timeouts before the submit.
  std::thread submitter([&] {
    unix_get(sock, fmt::format("/v1/events?after={}&wait_ms=1500", seq + 1000));
    h.submit_sh("true");
  });
  auto stream = unix_sse(sock, fmt::format("/v1/events/stream?after={}", seq), {},
                         [](const std::vector<SseFrame>& frames) {
                           return !frames.empty() && frames.back().event == "job.submitted";
                         });
  submitter.join();
  ASSERT_FALSE(stream.frames.empty());
  EXPECT_EQ(stream.frames.back().event, "job.submitted");
  expect_still_serving(h);
}

TEST(BadInput, IdleConnectionsPastTheCapMakeRoomForANewOne) {
  Harness h("fake:1");
  h.start();
  auto sock = socket_of(h);
  constexpr int kCap = 512;  // limits::kMaxUnixConnections (256 for one uid)
  std::vector<int> held;
  for (int i = 0; i < kCap; ++i) {
    int fd = unix_connect(sock);
    ASSERT_GE(fd, 0) << "connection " << i;
    held.push_back(fd);
  }
  // The held ones never sent a request: the newest request takes the place of an idle one
  // (docs/api.md, "Connections"), and the oldest held ones were closed to make room.
  auto answered = unix_get(sock, "/v1/health");
  EXPECT_EQ(answered.status, 200) << answered.body;
  EXPECT_TRUE(wait_closed_by_peer(held.front(), 10'000)) << "the oldest idle connection stays open";
  for (int fd : held) ::close(fd);
  EXPECT_EQ(h.gpuq({"status"}).status, 0);
}

}  // namespace
}  // namespace gpuq::testing
