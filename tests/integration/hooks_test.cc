// SPDX-License-Identifier: Apache-2.0
// Event hooks end to end (docs/hooks.md): a real HTTP receiver on loopback (Boost.Beast) that
// fails twice before it accepts, and a real command hook; the daemon restarts (SIGTERM, then
// SIGKILL) in the middle. Every event of the matching kinds arrives, in seq order, none lost.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "base/asio.h"
#include "harness.h"

namespace gpuq::testing {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

// One POST the receiver got.
struct Received {
  nlohmann::json body;
  std::string event_header;  // X-Gpuq-Event
  std::string content_type;
  bool accepted = false;  // answered 200 (else 500)
};

// A webhook receiver on 127.0.0.1: answers 500 to its first `failures` requests, then 200,
// and records every request. Serves one connection at a time on its own thread.
class Receiver {
 public:
  explicit Receiver(int failures)
      : failures_(failures),
        acceptor_(ioc_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    thread_ = std::thread([this] { serve(); });
  }
  ~Receiver() {
    stopping_ = true;
    // A blocking accept ends with a connection: make one.
    boost::system::error_code ec;
    tcp::socket poke(ioc_);
    poke.connect(acceptor_.local_endpoint(), ec);
    thread_.join();
  }
  int port() const { return acceptor_.local_endpoint().port(); }
  std::vector<Received> received() const {
    std::lock_guard lock(mutex_);
    return received_;
  }

 private:
  void serve() {
    while (!stopping_) {
      tcp::socket socket(ioc_);
      boost::system::error_code ec;
      acceptor_.accept(socket, ec);
      if (ec || stopping_) continue;
      answer(socket);
    }
  }
  void answer(tcp::socket& socket) {
    beast::flat_buffer buffer;
    http::request<http::string_body> request;
    boost::system::error_code ec;
    http::read(socket, buffer, request, ec);
    if (ec) return;
    Received got;
    got.body = nlohmann::json::parse(request.body(), nullptr, false);
    got.event_header = std::string(request["X-Gpuq-Event"]);
    got.content_type = std::string(request[http::field::content_type]);
    {
      std::lock_guard lock(mutex_);
      got.accepted = requests_++ >= failures_;
      received_.push_back(got);
    }
    http::response<http::string_body> response(
        got.accepted ? http::status::ok : http::status::internal_server_error, request.version());
    response.body() = got.accepted ? "ok" : "receiver not ready yet";
    response.keep_alive(false);
    response.prepare_payload();
    http::write(socket, response, ec);
    socket.shutdown(tcp::socket::shutdown_both, ec);
  }

  int failures_;
  asio::io_context ioc_;
  tcp::acceptor acceptor_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  int requests_ = 0;
  std::vector<Received> received_;
};

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

// The seqs of the events whose kind starts with `prefix` ("" for all).
std::vector<int64_t> seqs_of(const std::vector<nlohmann::json>& events, const std::string& prefix) {
  std::vector<int64_t> seqs;
  for (const auto& event : events) {
    if (event["kind"].get<std::string>().starts_with(prefix)) seqs.push_back(event["seq"]);
  }
  return seqs;
}

bool covers(const std::vector<int64_t>& arrived, const std::vector<int64_t>& expected) {
  std::set<int64_t> got(arrived.begin(), arrived.end());
  return std::all_of(expected.begin(), expected.end(), [&](int64_t seq) { return got.count(seq); });
}

// At least once, in order: nondecreasing (a repeat is of the event just before), nothing
// missing, nothing that should not have come.
void expect_in_order_none_missing(const std::vector<int64_t>& arrived,
                                  const std::vector<int64_t>& expected, const std::string& who) {
  SCOPED_TRACE(who);
  EXPECT_TRUE(std::is_sorted(arrived.begin(), arrived.end())) << ::testing::PrintToString(arrived);
  std::set<int64_t> got(arrived.begin(), arrived.end());
  std::set<int64_t> want(expected.begin(), expected.end());
  for (int64_t seq : want) EXPECT_TRUE(got.count(seq)) << "event " << seq << " never arrived";
  for (int64_t seq : got) {
    if (want.count(seq) == 0 && seq <= *want.rbegin()) ADD_FAILURE() << "unexpected event " << seq;
  }
}

const nlohmann::json* hook_named(const nlohmann::json& answer, const std::string& name) {
  for (const auto& hook : answer["hooks"]) {
    if (hook["name"] == name) return &hook;
  }
  return nullptr;
}

void run_jobs(Harness& h, int count) {
  std::vector<std::string> args = {"wait", "--timeout", "60s"};
  for (int i = 0; i < count; ++i) args.push_back(std::to_string(h.submit_sh("true")));
  ASSERT_EQ(h.gpuq(args).status, 0);
}

TEST(Hooks, AllArrive) {
  Receiver receiver(2);
  Harness h("fake:1");
  std::ofstream(h.home() + "/config.toml") << fmt::format(
      R"([[hook]]
name = "web"
events = ["job.*"]
url = "http://127.0.0.1:{}/gpuq"
timeout = "10s"
retry_min = "400ms"
retry_max = "800ms"

[[hook]]
name = "cmd"
command = "cat >> '{}' && echo \"$GPUQ_EVENT_SEQ $GPUQ_EVENT_KIND $GPUQ_HOOK\" >> '{}' && sleep 0.05"
retry_min = "100ms"
retry_max = "400ms"
)",
      receiver.port(), h.path("cmd.jsonl"), h.path("cmd_env.txt"));
  // The receiver's failures and the command's pace leave both hooks behind when the daemon
  // restarts, so deliveries resume from stored cursors.
  h.start();
  run_jobs(h, 2);
  h.stop();  // SIGTERM: cursors reached are committed on the way out
  h.start();
  run_jobs(h, 2);
  h.kill_daemon();  // SIGKILL: at most the last delivery comes again
  h.start();
  run_jobs(h, 2);

  auto events = h.events();
  std::vector<int64_t> want_web = seqs_of(events, "job.");
  std::vector<int64_t> want_cmd = seqs_of(events, "");
  ASSERT_GE(want_web.size(), 18u);  // submitted, started, succeeded for each of 6 jobs
  auto web_arrived = [&] {
    std::vector<int64_t> seqs;
    for (const auto& got : receiver.received()) {
      if (got.accepted) seqs.push_back(got.body["seq"]);
    }
    return seqs;
  };
  auto cmd_arrived = [&] {
    std::vector<int64_t> seqs;
    for (const auto& line : read_lines(h.path("cmd.jsonl"))) {
      seqs.push_back(nlohmann::json::parse(line)["seq"]);
    }
    return seqs;
  };
  ASSERT_TRUE(wait_until([&] { return covers(web_arrived(), want_web); }, 60'000));
  ASSERT_TRUE(wait_until([&] { return covers(cmd_arrived(), want_cmd); }, 60'000));
  expect_in_order_none_missing(web_arrived(), want_web, "url hook");
  expect_in_order_none_missing(cmd_arrived(), want_cmd, "command hook");

  // The receiver failed twice, and the hook kept the same first event until it was taken.
  auto all = receiver.received();
  ASSERT_GE(all.size(), 3u);
  EXPECT_FALSE(all[0].accepted);
  EXPECT_FALSE(all[1].accepted);
  EXPECT_EQ(all[0].body["seq"], want_web[0]);
  EXPECT_EQ(all[1].body["seq"], want_web[0]);
  EXPECT_EQ(all[2].body["seq"], want_web[0]);
  for (const auto& got : all) {
    EXPECT_EQ(got.event_header, got.body["kind"]) << got.body.dump();
    EXPECT_EQ(got.content_type, "application/json");
  }
  // The command saw the same event in its environment as on stdin. A delivery that the
  // daemon's stop cut off between the command's two writes is made again after the restart
  // (at least once), so an event may be on stdin more often than in the environment; every
  // event on stdin must reach the environment file, and every line there must be such an event.
  std::map<int64_t, std::string> kind_of;  // seq -> kind, as read on stdin
  std::set<std::string> env_lines;
  auto env_line = [](int64_t seq, const std::string& kind) { return fmt::format("{} {} cmd", seq, kind); };
  ASSERT_TRUE(wait_until([&] {
    kind_of.clear();
    for (const auto& line : read_lines(h.path("cmd.jsonl"))) {
      auto event = nlohmann::json::parse(line, nullptr, false);
      if (event.is_object()) kind_of[event["seq"].get<int64_t>()] = event["kind"].get<std::string>();
    }
    auto lines = read_lines(h.path("cmd_env.txt"));
    env_lines = std::set<std::string>(lines.begin(), lines.end());
    return std::all_of(kind_of.begin(), kind_of.end(),
                       [&](const auto& seen) { return env_lines.count(env_line(seen.first, seen.second)) > 0; });
  }));
  EXPECT_EQ(env_lines.size(), kind_of.size());
  for (const auto& line : env_lines) {
    int64_t seq = std::stoll(line.substr(0, line.find(' ')));
    ASSERT_TRUE(kind_of.count(seq)) << line;
    EXPECT_EQ(line, env_line(seq, kind_of[seq]));
  }

  // gpuq hooks: caught up, and the url hook remembers the receiver's failures.
  nlohmann::json answer;
  ASSERT_TRUE(wait_until(
      [&] {
        answer = h.gpuq_json({"hooks", "--json"});
        const auto* web = hook_named(answer, "web");
        const auto* cmd = hook_named(answer, "cmd");
        return web && cmd && (*web)["lag"] == 0 && (*cmd)["lag"] == 0;
      },
      30'000))
      << answer.dump();
  const auto& web = *hook_named(answer, "web");
  EXPECT_EQ(web["type"], "url");
  EXPECT_EQ(web["cursor"], web["last_seq"]);
  EXPECT_GE(web["cursor"].get<int64_t>(), want_web.back());
  EXPECT_EQ(web["failures"], 0);
  ASSERT_TRUE(web["last_error"].is_string()) << web.dump();
  EXPECT_NE(web["last_error"].get<std::string>().find("HTTP 500"), std::string::npos) << web.dump();
  EXPECT_TRUE(web["last_error_at"].is_string());
  const auto& cmd = *hook_named(answer, "cmd");
  EXPECT_EQ(cmd["type"], "command");
  EXPECT_TRUE(cmd["last_error"].is_null()) << cmd.dump();
  auto table = h.gpuq({"hooks"});
  EXPECT_EQ(table.status, 0);
  EXPECT_NE(table.out.find("NAME"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("HTTP 500"), std::string::npos) << table.out;
}

// Live processes (not zombies) whose command line contains `text`.
int live_processes_with(const std::string& text) {
  int count = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream cmdline_file(entry.path() / "cmdline", std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(cmdline_file)),
                        std::istreambuf_iterator<char>());
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(text) == std::string::npos) continue;
    std::ifstream stat_file(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
    size_t close = stat.rfind(')');
    if (close != std::string::npos && stat.substr(close + 2, 1) != "Z") ++count;
  }
  return count;
}

TEST(Hooks, NoBlock) {
  Harness h("fake:1");
  // A hook that hangs on its first event; the queue must not notice.
  std::string marker = fmt::format("61.{}", ::getpid());
  std::ofstream(h.home() + "/config.toml") << fmt::format(R"([[hook]]
name = "hung"
command = "sleep {}"
timeout = "5m"
)",
                                                          marker);
  h.start();
  run_jobs(h, 3);
  auto answer = h.gpuq_json({"hooks", "--json"});
  ASSERT_EQ(answer["hooks"].size(), 1u);
  EXPECT_GT(answer["hooks"][0]["lag"].get<int64_t>(), 0) << answer.dump();
  EXPECT_TRUE(wait_until([&] { return live_processes_with("sleep " + marker) >= 1; }));
  // SIGTERM: the daemon stops promptly and kills the hung command after a short grace.
  h.stop();
  EXPECT_EQ(h.daemon_pid(), 0);
  EXPECT_TRUE(wait_until([&] { return live_processes_with("sleep " + marker) == 0; }, 10'000));
}

// Text a job carries, full of shell syntax: each piece would create a file named after `tag`
// in the working directory of a shell that ran it as code. `tag` has no '/'.
std::string hostile_text(const std::string& tag) {
  return fmt::format(
      "a $(touch {0}-dollar) `touch {0}-backtick` ;touch {0}-semicolon; |touch {0}-pipe "
      "&& touch {0}-and '\"' \"'\" \\ $HOME %s {{}}\n"
      "line two $(touch {0}-line2)",
      tag);
}

// The same for a job name: no space, '/', ':', ',' or line break ($IFS stands for the space).
std::string hostile_name(const std::string& tag) {
  return fmt::format("n$(touch${{IFS}}{0}-name-dollar)`touch${{IFS}}{0}-name-backtick`"
                     ";touch${{IFS}}{0}-name-semicolon;'\"\\&&touch${{IFS}}{0}-name-and|",
                     tag);
}

// Every file under `dir` whose name starts with `prefix`.
std::vector<std::string> files_named(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> found;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(
           dir, std::filesystem::directory_options::skip_permission_denied, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().filename().string().starts_with(prefix)) found.push_back(it->path().string());
  }
  return found;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// docs/hooks.md's promise: event values reach a command hook only as variables and on stdin,
// never inside its command line, so a command that uses them as the docs show (quoted
// expansions, values handed on as arguments, the event read from stdin) never runs what a job
// put in its name, its script's arguments, its environment or the text a REQUIRES test printed.
// The job carries shell syntax in each; the hook records every event; once it has handled the
// last one, what it recorded is exactly the events, and no shell anywhere ran the syntax.
TEST(Hooks, EventTextIsNeverRunAsCode) {
  Harness h("fake:1");
  const std::string tag = fmt::format("PWNED{}", ::getpid());
  const std::string out = h.path("hook-out");
  std::filesystem::create_directories(out);
  std::ofstream(out + "/notify.sh") << "printf '%s|%s|%s\\n' \"$1\" \"$2\" \"$3\" >> '" + out +
                                           "/notify.txt'\n";
  std::ofstream(h.home() + "/config.toml") << fmt::format(
      R"([watch]
interval = "100ms"
[runs]
requires_poll = "100ms"
requires_poll_max = "200ms"

[[hook]]
name = "shell"
command = '''
set -e
echo "$GPUQ_EVENT_SEQ $GPUQ_EVENT_KIND job=$GPUQ_EVENT_JOB run=$GPUQ_EVENT_RUN" >> '{0}/env.txt'
printf '%s\n' "$GPUQ_EVENT_DATA" >> '{0}/data.txt'
sh '{0}/notify.sh' "$GPUQ_EVENT_KIND" "job $GPUQ_EVENT_JOB" "$GPUQ_EVENT_DATA"
pwd > '{0}/cwd.txt'
IFS= read -r event
printf '%s\n' "$event" >> '{0}/stdin.jsonl'
'''
)",
      out);
  h.start();

  const std::string name = hostile_name(tag);
  const std::string value = hostile_text(tag + "-env");
  const std::vector<std::string> args = {hostile_text(tag + "-arg1"), "-x", hostile_text(tag + "-arg3")};
  std::ofstream(h.path("job.sh")) << "#!/bin/sh\nprintf '%s\\n' \"$@\" > args.out\n"
                                     "printf '%s' \"$HOSTILE\" > env.out\n"
                                     "printf '%s' \"$GPUQ_JOB_NAME\" > name.out\n";
  // The REQUIRES test prints the value to stderr, which job.requires_wait quotes in its "why".
  std::vector<std::string> submit = {
      "submit",     "--json", "--name", name, "--env", "HOSTILE=" + value, "--requires",
      "test -e ready || { printf '%s' \"$HOSTILE\" >&2; exit 1; }", "--requires-warn", "100ms",
      "job.sh"};
  submit.insert(submit.end(), args.begin(), args.end());
  auto submitted = h.gpuq(submit);
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  int64_t id = nlohmann::json::parse(submitted.out)["id"];
  auto waited_with_value = [&] {
    for (const auto& e : h.events()) {
      if (e["kind"] == "job.requires_wait" && e["job"] == id &&
          e["data"].value("why", "").find("$(touch " + tag + "-env-dollar)") != std::string::npos) {
        return true;
      }
    }
    return false;
  };
  ASSERT_TRUE(wait_until(waited_with_value)) << h.show(id).dump();
  h.touch("ready");
  ASSERT_EQ(h.gpuq({"wait", std::to_string(id), "--timeout", "60s"}).status, 0) << h.show(id).dump();

  // The job itself got every text as it was given.
  std::string joined;
  for (const auto& arg : args) joined += arg + "\n";
  EXPECT_EQ(file_text(h.path("args.out")), joined);
  EXPECT_EQ(file_text(h.path("env.out")), value);
  EXPECT_EQ(file_text(h.path("name.out")), name);

  // The hook has handled every event up to the job's end once its stdin record holds the last
  // (it writes that record last).
  std::vector<nlohmann::json> events = h.events();
  ASSERT_FALSE(events.empty());
  const int64_t last = events.back()["seq"];
  ASSERT_TRUE(wait_until([&] {
    auto lines = read_lines(out + "/stdin.jsonl");
    return !lines.empty() &&
           nlohmann::json::parse(lines.back(), nullptr, false).value("seq", int64_t{0}) >= last;
  })) << file_text(out + "/stdin.jsonl");
  auto stdin_lines = read_lines(out + "/stdin.jsonl");
  auto env_lines = read_lines(out + "/env.txt");
  auto data_lines = read_lines(out + "/data.txt");
  auto notify_lines = read_lines(out + "/notify.txt");
  ASSERT_GE(stdin_lines.size(), events.size());
  ASSERT_GE(env_lines.size(), events.size());
  ASSERT_GE(data_lines.size(), events.size());
  ASSERT_GE(notify_lines.size(), events.size());
  bool saw_name = false;
  bool saw_value = false;
  for (size_t i = 0; i < events.size(); ++i) {
    const nlohmann::json& e = events[i];
    SCOPED_TRACE(e.dump());
    std::string job = e["job"].is_number() ? std::to_string(e["job"].get<int64_t>()) : "";
    std::string run = e["run"].is_number() ? std::to_string(e["run"].get<int64_t>()) : "";
    EXPECT_EQ(nlohmann::json::parse(stdin_lines[i], nullptr, false), e);
    EXPECT_EQ(env_lines[i], fmt::format("{} {} job={} run={}", e["seq"].get<int64_t>(),
                                        e["kind"].get<std::string>(), job, run));
    EXPECT_EQ(data_lines[i], e["data"].dump());
    EXPECT_EQ(notify_lines[i],
              fmt::format("{}|job {}|{}", e["kind"].get<std::string>(), job, e["data"].dump()));
    saw_name = saw_name || e["data"].value("name", "") == name;
    saw_value = saw_value || e["data"].value("why", "").find(value.substr(0, 60)) != std::string::npos;
  }
  EXPECT_TRUE(saw_name) << "no event carried the job's name";
  EXPECT_TRUE(saw_value) << "no event carried what the REQUIRES test printed";

  // No shell ran any of it: not the hook's (in its working directory), not the job's, not a
  // REQUIRES test's; nowhere under the test's directories (the daemon's home among them).
  std::string hook_cwd = file_text(out + "/cwd.txt");
  ASSERT_TRUE(hook_cwd.ends_with("\n")) << hook_cwd;
  hook_cwd.pop_back();
  const std::vector<std::string> none;
  EXPECT_EQ(files_named(std::filesystem::path(h.home()).parent_path().string(), tag), none);
  EXPECT_EQ(files_named(hook_cwd, tag), none);
  EXPECT_EQ(files_named(h.work(), tag), none);
  EXPECT_EQ(files_named(h.home(), tag), none);
}

TEST(Hooks, BadConfig) {
  Harness h("fake:1");
  std::ofstream(h.home() + "/config.toml") << "[[hook]]\ncommand = \"true\"\nurl = \"http://x\"\n";
  auto started = h.gpuq({"daemon", "--gpus", "fake:1", "--detach", "--http", "off"});
  EXPECT_NE(started.status, 0);
  EXPECT_NE(started.err.find("config.toml:3:7: hook 1 has both command and url"), std::string::npos)
      << started.err;
}

}  // namespace
}  // namespace gpuq::testing
