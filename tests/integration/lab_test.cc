// SPDX-License-Identifier: Apache-2.0
// A shared box (docs/lab.md) end to end, as real users: a `gpuq daemon --system` on fake:4 (root,
// as CI runs), three members of a test group (one an admin by [users] admins) and one user
// outside it, each running the real `gpuq` through runuser from a directory of their own. The
// users and the group are made for this suite and removed after it, also when a test fails.
// Skipped where the suite cannot make users (not root, no useradd).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <chrono>
#include <thread>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "harness.h"
#include "tcp_http.h"
#include "test_cgroup.h"
#include "unix_http.h"
#include "os/process.h"

namespace gpuq::testing {
namespace {

namespace fs = std::filesystem;

std::string name_of(const char* role) { return fmt::format("gpuqt-{}-{}", role, ::getpid()); }

int shell(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()); }

class Lab : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (::geteuid() != 0 || shell("command -v useradd") != 0 || shell("command -v runuser") != 0) return;
    made_ = shell("groupadd " + group()) == 0;
    for (const char* role : {"alice", "bob", "carol"}) {
      made_ = made_ && shell(fmt::format("useradd -M -N -s /bin/sh -G {} {}", group(), name_of(role))) == 0;
    }
    made_ = made_ && shell(fmt::format("useradd -M -N -s /bin/sh {}", name_of("eve"))) == 0;
    // The users run a copy of the binaries (the light gpuq and the gpuqd beside it that it
    // execs): the build may lie where only root can reach it (a checkout in a 0700 directory).
    binary_ = (fs::temp_directory_path() / name_of("bin")).string();
    fs::create_directories(binary_);
    fs::permissions(binary_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                 fs::perms::others_read | fs::perms::others_exec);
    binary_ += "/gpuq";
    const fs::path full = fs::path(GPUQ_BINARY).parent_path() / "gpuqd";
    const std::string full_copy = fs::path(binary_).parent_path() / "gpuqd";
    std::error_code copied, copied_full;
    fs::copy_file(GPUQ_BINARY, binary_, fs::copy_options::overwrite_existing, copied);
    fs::copy_file(full, full_copy, fs::copy_options::overwrite_existing, copied_full);
    made_ = made_ && !copied && !copied_full && shell("chmod 0755 " + binary_ + " " + full_copy) == 0;
  }
  static void TearDownTestSuite() {
    for (const char* role : {"alice", "bob", "carol", "eve"}) remove_user(name_of(role));
    if (shell("getent group " + group()) == 0 && shell("groupdel " + group()) != 0)
      ADD_FAILURE() << "groupdel " << group() << " failed: the group is left on this machine";
    std::error_code ignored;
    if (!binary_.empty()) fs::remove_all(fs::path(binary_).parent_path(), ignored);
  }
  static std::string group() { return name_of("lab"); }
  // userdel refuses a user with a process left (a job of theirs still dying as the suite ends,
  // or a zombie: where PID 1 reaps orphans only every few seconds, as on these machines), which
  // left the user on the machine: their processes (by real and by effective uid) are killed
  // first, for up to 30 s, and a user that still cannot be removed fails the suite, named.
  static void remove_user(const std::string& name) {
    if (shell("id -u " + name) != 0) return;  // never made
    for (int attempt = 0; attempt < 300; ++attempt) {
      shell("pkill -KILL -U " + name + "; pkill -KILL -u " + name);
      if (shell("userdel " + name) == 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "userdel " << name << " kept failing for 30 s: the user is left on this machine";
  }

  void SetUp() override {
    if (!made_) GTEST_SKIP() << "needs root with useradd and runuser to make the box's users";
    socket_ = harness_.work() + "/run/gpuq.sock";
    for (const char* role : {"alice", "bob", "carol", "eve"}) {
      std::string dir = harness_.path(role);
      fs::create_directories(dir);
      ASSERT_EQ(shell(fmt::format("chown {} {}", name_of(role), dir)), 0);
    }
    fs::permissions(harness_.work(), fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  }
  void TearDown() override { harness_.stop(); }

  // Starts the box's daemon with [users] group and admins (carol), and `more` of config.toml
  // after them.
  void start_box(std::vector<std::string> flags = {"--http", "off"}, const std::string& more = "") {
    fs::create_directories(harness_.home());
    std::ofstream(harness_.home() + "/config.toml")
        << fmt::format("[users]\ngroup = \"{}\"\nadmins = [\"{}\"]\n", group(), name_of("carol")) << more;
    ::setenv("GPUQ_SYSTEM_SOCKET", socket_.c_str(), 1);
    flags.insert(flags.begin(), "--system");
    harness_.start(flags);
    ::unsetenv("GPUQ_SYSTEM_SOCKET");
  }

  // `gpuq ARGS` as `role`, from their own directory, with no daemon of their own.
  CliResult as(const char* role, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"runuser", "-u", name_of(role), "--", "env", "-i",
                                     "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/nonexistent",
                                     "GPUQ_SYSTEM_SOCKET=" + socket_, "sh", "-c", "cd \"$0\" && exec \"$@\"",
                                     harness_.path(role), binary_};
    argv.insert(argv.end(), args.begin(), args.end());
    auto result = os::run_command(argv, Millis(60'000));
    if (!result) {
      ADD_FAILURE() << "cannot run gpuq as " << role << ": " << result.error().message;
      return {};
    }
    return {result->exit_code, result->out, result->err};
  }
  int64_t submit(const char* role, const std::string& name, const std::string& script,
                 int gpus = 1) {
    auto r = as(role, {"submit", "--id-only", "--gpus", std::to_string(gpus), "--name", name, "--",
                       "sh", "-c", script});
    EXPECT_EQ(r.status, 0) << r.err;
    return std::atoll(r.out.c_str());
  }
  std::string refusal(const char* role, const std::vector<std::string>& args) {
    auto r = as(role, args);
    EXPECT_NE(r.status, 0) << role << " may " << fmt::format("{}", fmt::join(args, " ")) << ": " << r.out;
    return r.err;
  }

  // The box's GPUs: two for a test whose name says TwoGpus, else four.
  static std::string box_gpus() {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    return name.find("TwoGpus") != std::string::npos ? "fake:2" : "fake:4";
  }

  static inline bool made_ = false;
  static inline std::string binary_;  // the users' copy of the gpuq binary
  Harness harness_{box_gpus()};
  std::string socket_;
};

TEST_F(Lab, ThreeUsersShareOneDaemonEachWithTheirOwnRights) {
  start_box();
  std::string alice = name_of("alice"), bob = name_of("bob"), carol = name_of("carol");
  int64_t a1 = submit("alice", "a1", "while [ ! -e go ]; do sleep 0.05; done");
  int64_t a2 = submit("alice", "a2", "id -un > whoami; echo hello from a2");
  int64_t b1 = submit("bob", "b1", "while [ ! -e go ]; do sleep 0.05; done");
  int64_t c1 = submit("carol", "c1", "id -un > whoami");
  ASSERT_TRUE(harness_.wait_for(a2, [](const nlohmann::json& j) { return j["state"] == "succeeded"; }));

  // Everyone sees the whole queue, with each job's owner.
  for (const char* role : {"alice", "bob", "carol"}) {
    auto r = as(role, {"status", "--json"});
    ASSERT_EQ(r.status, 0) << r.err;
    auto jobs = nlohmann::json::parse(r.out)["jobs"];
    std::map<int64_t, std::string> owners;
    for (const auto& j : jobs) owners[j["id"].get<int64_t>()] = j["user"].get<std::string>();
    EXPECT_EQ(owners[a1], alice);
    EXPECT_EQ(owners[a2], alice);
    EXPECT_EQ(owners[b1], bob);
    EXPECT_EQ(owners[c1], carol);
  }
  // --mine: only one's own.
  auto mine = as("bob", {"status", "--json", "--mine"});
  ASSERT_EQ(mine.status, 0) << mine.err;
  auto bobs = nlohmann::json::parse(mine.out)["jobs"];
  ASSERT_EQ(bobs.size(), 1u) << mine.out;
  EXPECT_EQ(bobs[0]["id"], b1);
  auto by_user = nlohmann::json::parse(as("bob", {"status", "--json", "--user", alice}).out)["jobs"];
  EXPECT_EQ(by_user.size(), 2u);

  // Alice reads her own log, not Bob's; acts on her own jobs, not Bob's.
  auto log = as("alice", {"logs", std::to_string(a2)});
  EXPECT_EQ(log.status, 0) << log.err;
  EXPECT_NE(log.out.find("hello from a2"), std::string::npos);
  std::string owner_named = fmt::format("belongs to '{}': only '{}' or an admin may", bob, bob);
  EXPECT_NE(refusal("alice", {"logs", std::to_string(b1)}).find(owner_named + " read the log of it"), std::string::npos);
  for (const char* verb : {"cancel", "hold", "retry"}) {
    EXPECT_NE(refusal("alice", {verb, std::to_string(b1)}).find(owner_named), std::string::npos) << verb;
  }
  EXPECT_NE(refusal("alice", {"move", std::to_string(b1), "--top"}).find(owner_named), std::string::npos);
  EXPECT_NE(refusal("bob", {"cancel", std::to_string(a1)}).find(fmt::format("belongs to '{}'", alice)),
            std::string::npos);
  // A job that does not exist is not found, for a user as for an admin (it was "belongs to no
  // user").
  for (const char* verb : {"cancel", "hold", "logs"}) {
    auto none = as("alice", {verb, "999999"});
    EXPECT_NE(none.status, 0) << verb;
    EXPECT_NE(none.err.find("no job 999999"), std::string::npos) << verb << ": " << none.err;
  }
  // The daemon's own acts are the admins'.
  for (auto args : std::vector<std::vector<std::string>>{{"drain"}, {"gc"}, {"release", "--attention", "gpu0"}}) {
    EXPECT_NE(refusal("alice", args).find("only an admin may"), std::string::npos) << args[0];
  }
  // Bob's job still runs: nothing of the refusals touched it.
  EXPECT_EQ(harness_.show(b1)["state"], "running");

  // Carol is an admin: she acts on everyone's jobs and on the daemon.
  auto cancelled = as("carol", {"cancel", std::to_string(b1)});
  EXPECT_EQ(cancelled.status, 0) << cancelled.err;
  EXPECT_EQ(as("carol", {"drain"}).status, 0);
  EXPECT_EQ(as("carol", {"undrain"}).status, 0);
  auto carol_log = as("carol", {"logs", std::to_string(a2)});
  EXPECT_NE(carol_log.out.find("hello from a2"), std::string::npos) << carol_log.err;

  // Alice's own cancel works.
  EXPECT_EQ(as("alice", {"cancel", std::to_string(a1)}).status, 0);
  EXPECT_TRUE(harness_.wait_for(a1, [](const nlohmann::json& j) { return j["state"] == "cancelled"; }));

  // Each job ran as its submitter.
  EXPECT_TRUE(harness_.wait_for(c1, [](const nlohmann::json& j) { return j["state"] == "succeeded"; }));
  std::ifstream alice_id(harness_.path("alice") + "/whoami"), carol_id(harness_.path("carol") + "/whoami");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(alice_id), {}), alice + "\n");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(carol_id), {}), carol + "\n");
}

TEST_F(Lab, AUserOutsideTheGroupCannotConnect) {
  start_box();
  auto r = as("eve", {"status"});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("permission denied connecting to " + socket_), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ask an admin to add you"), std::string::npos) << r.err;
}

TEST_F(Lab, TheSocketIsTheGroupsAndTheHomeOnlyPassesThrough) {
  start_box();
  struct stat socket_info {};
  ASSERT_EQ(::stat(socket_.c_str(), &socket_info), 0);
  EXPECT_EQ(socket_info.st_mode & 0777, 0660u);
  EXPECT_EQ(socket_info.st_uid, 0u);
  struct stat home_info {};
  ASSERT_EQ(::stat(harness_.home().c_str(), &home_info), 0);
  EXPECT_EQ(home_info.st_mode & 0777, 0711u);
  // Root's own CLI with --home still reaches the daemon (its home socket, root's alone).
  EXPECT_EQ(harness_.gpuq({"status"}).status, 0);
}

TEST_F(Lab, TheDaemonRefusesSystemModeToAnyoneButRoot) {
  auto r = as("alice", {"--home", harness_.path("alice") + "/home", "daemon", "--system", "--gpus", "fake:1"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--system starts each job as the user who submitted it, which needs root"),
            std::string::npos)
      << r.err;
}

TEST_F(Lab, ASingleUserDaemonLetsNoOtherUserIn) {
  harness_.start();  // today's mode: no --system
  auto r = as("alice", {"--home", harness_.home(), "status"});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r.err;
  auto me = harness_.gpuq_json({"status", "--json"});
  EXPECT_TRUE(me.contains("jobs"));
}

// A daemon that is not root cannot give a run directory to another uid: a container user of
// numbers other than its own is refused at the submit (it used to be accepted, then every start
// failed and was retried for ever); its own uid is accepted.
TEST_F(Lab, ADaemonOfAUserRefusesAContainerUserOfAnotherUid) {
  const std::string home = harness_.path("eve") + "/home";
  // Eve's daemon is stopped however the test ends (SIGKILL if it will not go).
  struct StopDaemon {
    std::string lock;
    ~StopDaemon() {
      std::ifstream in(lock);
      pid_t pid = 0;
      if (!(in >> pid) || pid <= 0) return;
      ::kill(pid, SIGTERM);
      for (int i = 0; i < 100 && ::kill(pid, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (::kill(pid, 0) == 0) ::kill(pid, SIGKILL);
    }
  } stop{home + "/daemon.lock"};
  auto started = as("eve", {"daemon", "--home", home, "--gpus", "fake:1", "--http", "off", "--detach"});
  ASSERT_EQ(started.status, 0) << started.err;
  auto refused = as("eve", {"--home", home, "submit", "--image", "busybox", "--container-user",
                            "4321:4322", "--", "true"});
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.err.find("--container-user 4321:4322: this daemon runs as uid"), std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("cannot give the run directory to uid 4321"), std::string::npos) << refused.err;
  const passwd* eve = ::getpwnam(name_of("eve").c_str());
  ASSERT_NE(eve, nullptr);
  const std::string uid = std::to_string(eve->pw_uid);
  auto own = as("eve", {"--home", home, "submit", "--id-only", "--hold", "--image", "busybox",
                        "--container-user", uid, "--", "true"});
  EXPECT_EQ(own.status, 0) << own.err;
  // A plan's job is refused the same way, and the plan's file names it.
  std::ofstream(harness_.path("eve") + "/plan.json")
      << R"({"jobs": [{"id": "a", "command": ["true"], "image": "busybox", "container_user": "4321"}]})";
  auto plan = as("eve", {"--home", home, "submit", "plan.json"});
  EXPECT_EQ(plan.status, 1);
  EXPECT_NE(plan.err.find("plan.json"), std::string::npos) << plan.err;
  EXPECT_NE(plan.err.find("--container-user 4321: this daemon runs as uid"), std::string::npos) << plan.err;
}

TEST_F(Lab, EachUsersDashboardTokenActsWithTheirRightsUntilRevoked) {
  start_box({"--http", "127.0.0.1:0"});
  std::string listen = harness_.health()["http"]["listen"].get<std::string>();
  int64_t b1 = submit("bob", "b1", "while [ ! -e go ]; do sleep 0.05; done");
  auto token_of = [&](const char* role) {
    auto r = as(role, {"dashboard", "--no-open", "--json"});
    EXPECT_EQ(r.status, 0) << r.err;
    std::string url = nlohmann::json::parse(r.out)["url"].get<std::string>();
    return url.substr(url.find("#token=") + 7);
  };
  std::string alice_token = token_of("alice");
  std::string bob_token = token_of("bob");
  EXPECT_NE(alice_token, bob_token);
  EXPECT_EQ(token_of("alice"), alice_token);  // one token per user
  auto me = tcp_request("GET", "http://" + listen + "/v1/me", {"Authorization: Bearer " + alice_token});
  ASSERT_EQ(me.status, 200) << me.body;
  auto who = nlohmann::json::parse(me.body);
  EXPECT_EQ(who["user"], name_of("alice"));
  EXPECT_EQ(who["admin"], false);
  EXPECT_EQ(who["system"], true);
  auto post_as = [&](const std::string& token, const std::string& path) {
    return tcp_request("POST", "http://" + listen + path,
                       {"Authorization: Bearer " + token, "Origin: http://" + listen, "X-Gpuq-Csrf: 1",
                        "Content-Type: application/json"},
                       "{}");
  };
  auto refused = post_as(alice_token, fmt::format("/v1/jobs/{}/cancel", b1));
  EXPECT_EQ(refused.status, 403) << refused.body;
  EXPECT_EQ(code_of(refused), "permission_denied");
  EXPECT_EQ(harness_.show(b1)["state"], "running");
  auto log = tcp_request("GET", fmt::format("http://{}/v1/jobs/{}/log", listen, b1),
                         {"Authorization: Bearer " + alice_token});
  EXPECT_EQ(log.status, 403);

  auto revoked = as("alice", {"dashboard", "--revoke"});
  EXPECT_EQ(revoked.status, 0) << revoked.err;
  EXPECT_NE(revoked.out.find("revoked the dashboard token of " + name_of("alice")), std::string::npos);
  EXPECT_EQ(tcp_request("GET", "http://" + listen + "/v1/me", {"Authorization: Bearer " + alice_token}).status, 401);
  // A stream opened with a token ends once the token is revoked (at its next event).
  std::string bob_stream_token = bob_token;
  RawAnswer stream;
  std::thread reader([&] {
    stream = raw_exchange(listen, fmt::format("GET /v1/events/stream HTTP/1.1\r\nHost: {}\r\n"
                                              "Authorization: Bearer {}\r\n\r\n",
                                              listen, bob_stream_token),
                          60'000);
  });
  bool streaming = wait_until([&] {
    auto metrics = unix_get(harness_.home() + "/gpuq.sock", "/metrics").body;
    return metrics.find("gpuq_connections_open{class=\"event_streams\"} 1") != std::string::npos;
  });
  EXPECT_EQ(as("bob", {"dashboard", "--revoke"}).status, 0);
  submit("carol", "wake-the-stream", "true");
  reader.join();
  ASSERT_TRUE(streaming) << "the stream never opened: " << stream.text.substr(0, 300);
  EXPECT_TRUE(stream.closed) << "the stream of a revoked token went on: " << stream.text.substr(0, 300);
  bob_token = token_of("bob");

  // Bob's (new) token works, and acts on his job.
  auto cancelled = post_as(bob_token, fmt::format("/v1/jobs/{}/cancel", b1));
  EXPECT_EQ(cancelled.status, 200) << cancelled.body;
}


// Who a job runs as and what it can reach: the submitter's ids and groups, HOME/USER/LOGNAME
// from the passwd entry, no capability; its files are the submitter's; another user's run can
// be neither signalled nor read, and the jobs directory not listed.
TEST_F(Lab, AJobRunsAsItsSubmitterAndReachesNothingOfAnotherUsersRun) {
  start_box();
  const std::string bob_dir = harness_.path("bob"), alice_dir = harness_.path("alice");
  int64_t b1 = submit("bob", "b1", "echo $$ > pid; echo secret of bob; while [ ! -e go ]; do sleep 0.05; done");
  ASSERT_TRUE(harness_.wait_for(b1, [&](const nlohmann::json& j) {
    return j["state"] == "running" && fs::exists(bob_dir + "/pid") && fs::file_size(bob_dir + "/pid") > 0;
  }));
  const std::string bob_log = fmt::format("{}/jobs/{}/run-1/output.log", harness_.home(), b1);
  ASSERT_TRUE(fs::exists(bob_log));
  std::string probe = fmt::format(
      "id -un > whoami; id -G > groups; "
      "grep -E '^Cap(Inh|Prm|Eff|Amb):' /proc/self/status > caps; "
      "echo \"$HOME $USER $LOGNAME\" > identity; "
      "kill -0 \"$(cat {}/pid)\" 2> kill.err; echo $? > kill.rc; "
      "cat {} > stolen 2> read.err; echo $? > read.rc; "
      "ls {}/jobs > listed 2> list.err; echo $? > list.rc",
      bob_dir, bob_log, harness_.home());
  int64_t a1 = submit("alice", "a1", probe);
  ASSERT_TRUE(harness_.wait_for(a1, [](const nlohmann::json& j) { return j["state"] == "succeeded"; }))
      << harness_.show(a1).dump();
  auto read = [&](const std::string& name) {
    std::ifstream in(alice_dir + "/" + name);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string alice = name_of("alice");
  struct passwd* pw = ::getpwnam(alice.c_str());
  ASSERT_NE(pw, nullptr);
  struct group* gr = ::getgrnam(group().c_str());
  ASSERT_NE(gr, nullptr);
  EXPECT_EQ(read("whoami"), alice + "\n");
  EXPECT_NE((" " + read("groups")).find(fmt::format(" {}", gr->gr_gid)), std::string::npos) << read("groups");
  EXPECT_EQ(read("identity"), fmt::format("{} {} {}\n", pw->pw_dir, alice, alice));
  EXPECT_EQ(read("caps"),
            "CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n"
            "CapAmb:\t0000000000000000\n");
  // Its files are Alice's: what it wrote, its run directory and its log.
  struct stat st {};
  ASSERT_EQ(::stat((alice_dir + "/whoami").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, pw->pw_uid);
  const std::string run_dir = fmt::format("{}/jobs/{}/run-1", harness_.home(), a1);
  ASSERT_EQ(::stat(run_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, pw->pw_uid);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((run_dir + "/output.log").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, pw->pw_uid);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // Bob's run: not signalled, not read; the jobs directory: not listed.
  EXPECT_EQ(read("kill.rc"), "1\n");
  EXPECT_NE(read("kill.err").find("not permitted"), std::string::npos) << read("kill.err");
  EXPECT_NE(read("read.rc"), "0\n");
  EXPECT_NE(read("read.err").find("Permission denied"), std::string::npos) << read("read.err");
  EXPECT_EQ(read("stolen"), "");
  EXPECT_NE(read("list.rc"), "0\n");
  EXPECT_EQ(harness_.show(b1)["state"], "running");
  harness_.touch("bob/go");
  EXPECT_TRUE(harness_.wait_for(b1, [](const nlohmann::json& j) { return j["state"] == "succeeded"; }));
}

// A script is read by the CLI, as its user: one they cannot read is refused, naming it.
TEST_F(Lab, AScriptItsSubmitterCannotReadIsRefused) {
  start_box();
  const std::string secret = harness_.path("secret.sh");
  std::ofstream(secret) << "echo root's script\n";
  fs::permissions(secret, fs::perms::owner_read | fs::perms::owner_write);
  auto r = as("alice", {"submit", "--gpus", "0", secret});
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.err.find(secret), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r.err;
  EXPECT_TRUE(harness_.gpuq_json({"status", "--json"})["jobs"].empty());
  // A script Alice can read is hers: its text is shown to her and the admins, not to Bob.
  std::ofstream(harness_.path("alice") + "/mine.sh") << "echo alice's script\n";
  auto mine = as("alice", {"submit", "--id-only", "--gpus", "0", "mine.sh"});
  ASSERT_EQ(mine.status, 0) << mine.err;
  std::string id = std::to_string(std::atoll(mine.out.c_str()));
  auto text_seen_by = [&](const char* role) {
    auto r = as(role, {"show", id, "--json"});
    EXPECT_EQ(r.status, 0) << r.err;
    return nlohmann::json::parse(r.out)["script"]["text"];
  };
  EXPECT_EQ(text_seen_by("alice"), "echo alice's script\n");
  EXPECT_EQ(text_seen_by("carol"), "echo alice's script\n");
  EXPECT_TRUE(text_seen_by("bob").is_null());
}

// Fair share on two GPUs: Bob queued four jobs before Alice queued two, yet both of Alice's
// start before Bob's second (first in, first out would start all of Bob's first). Each job takes
// both GPUs, so one runs at a time and each start is decided by usage alone: Bob's and Alice's
// first queued with nothing used, Bob's first goes (it came first); then Alice has used nothing;
// then Alice's 0.1 s on two GPUs weighs less than Bob's 0.6 s. (Jobs that ran side by side would
// be charged near-equal usage while they ran, and their order would be decided by noise.)
TEST_F(Lab, FairShareInterleavesTwoUsersOnTwoGpus) {
  start_box();
  auto blocker = as("carol", {"submit", "--id-only", "--gpus", "2", "--name", "blocker", "--", "sh", "-c",
                              "while [ ! -e go ]; do sleep 0.05; done"});
  ASSERT_EQ(blocker.status, 0) << blocker.err;
  int64_t blocker_id = std::atoll(blocker.out.c_str());
  ASSERT_TRUE(harness_.wait_for(blocker_id, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  std::vector<int64_t> bobs, alices;
  for (int i = 0; i < 4; ++i) bobs.push_back(submit("bob", fmt::format("b{}", i), "sleep 0.6", 2));
  for (int i = 0; i < 2; ++i) alices.push_back(submit("alice", fmt::format("a{}", i), "sleep 0.1", 2));
  harness_.touch("carol/go");
  std::map<int64_t, int64_t> started;
  for (int64_t id : bobs) {
    ASSERT_TRUE(harness_.wait_for(id, [](const nlohmann::json& j) { return j["state"] == "succeeded"; }));
  }
  for (int64_t id : alices) {
    ASSERT_TRUE(harness_.wait_for(id, [](const nlohmann::json& j) { return j["state"] == "succeeded"; }));
  }
  for (int64_t id : bobs) started[id] = harness_.show(id)["runs"][0]["started_at_ms"].get<int64_t>();
  for (int64_t id : alices) started[id] = harness_.show(id)["runs"][0]["started_at_ms"].get<int64_t>();
  std::vector<std::pair<int64_t, std::string>> order;  // the starts, for the messages below
  for (size_t i = 0; i < bobs.size(); ++i) order.emplace_back(started[bobs[i]], fmt::format("b{}", i));
  for (size_t i = 0; i < alices.size(); ++i) order.emplace_back(started[alices[i]], fmt::format("a{}", i));
  std::sort(order.begin(), order.end());
  std::string starts;
  for (const auto& [at, name] : order) starts += fmt::format(" {}@{}", name, at - order.front().first);
  SCOPED_TRACE("started in order (ms after the first):" + starts);
  EXPECT_LT(started[bobs[0]], started[alices[0]]) << "Bob's first job, queued first, went second";
  EXPECT_LT(started[alices[0]], started[bobs[1]]) << "Alice's first job waited behind Bob's second";
  EXPECT_LT(started[alices[1]], started[bobs[1]]) << "Alice's second job waited behind Bob's second";
  // The report gives both their part of the GPU-hours beside their fair share.
  auto report = harness_.gpuq_json({"report", "--by", "user", "--json"});
  int users_seen = 0;
  for (const auto& row : report["groups"]) {
    if (row["key"] == name_of("alice") || row["key"] == name_of("bob")) {
      ++users_seen;
      EXPECT_TRUE(row["used_share"].is_number()) << row.dump();
      EXPECT_TRUE(row["fair_share"].is_number()) << row.dump();
    }
  }
  EXPECT_EQ(users_seen, 2) << report.dump();
}

// Limits: Alice's own max_gpus = 1 makes her second job wait with the reason while Bob's runs;
// max_queued = 3 refuses her fourth unfinished job, creating nothing.
TEST_F(Lab, AUsersLimitsMakeTheirJobsWaitAndRefuseTooMany) {
  start_box({"--http", "off"}, fmt::format("max_queued = 3\n\n[users.{}]\nmax_gpus = 1\n", name_of("alice")));
  int64_t a1 = submit("alice", "a1", "while [ ! -e go ]; do sleep 0.05; done");
  int64_t a2 = submit("alice", "a2", "true");
  ASSERT_TRUE(harness_.wait_for(a1, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  EXPECT_TRUE(harness_.wait_for(a2, [](const nlohmann::json& j) {
    return j["state"] == "pending" && j["reason"].is_string() &&
           j["reason"].get<std::string>().find("user limit: 1 of 1 GPUs in use") != std::string::npos;
  })) << harness_.show(a2).dump();
  int64_t b1 = submit("bob", "b1", "true");
  EXPECT_TRUE(harness_.wait_for(b1, [](const nlohmann::json& j) { return j["state"] == "succeeded"; }));
  EXPECT_EQ(harness_.show(a2)["state"], "pending");
  submit("alice", "a3", "true");
  auto refused = as("alice", {"submit", "--gpus", "1", "--name", "a4", "--", "true"});
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.err.find(fmt::format("user limit: {} has 3 of 3 queued jobs", name_of("alice"))),
            std::string::npos)
      << refused.err;
  auto names = harness_.gpuq_json({"status", "--json"})["jobs"];
  for (const auto& j : names) EXPECT_NE(j["name"], "a4");
  harness_.touch("alice/go");
  EXPECT_TRUE(harness_.wait_for(a2, [](const nlohmann::json& j) { return j["state"] == "succeeded"; }));
}

// Under cgroup containment a user's runs live under their own parent cgroup, users/LOGIN.
TEST_F(Lab, AUsersRunsLiveUnderTheirOwnParentCgroup) {
  TestCgroup cg;
  if (cg.dir().empty()) GTEST_SKIP() << "cannot create a cgroup under /sys/fs/cgroup/unified (no cgroup v2 there, or not root)";
  start_box({"--http", "off"}, fmt::format("\n[cgroup]\nroot = \"{}\"\n", cg.dir()));
  int64_t a1 = submit("alice", "a1", "cat /proc/self/cgroup > cgroup");
  ASSERT_TRUE(harness_.wait_for(a1, [](const nlohmann::json& j) { return j["state"] == "succeeded"; }))
      << harness_.show(a1).dump();
  std::ifstream in(harness_.path("alice") + "/cgroup");
  std::string text(std::istreambuf_iterator<char>(in), {});
  std::string run_id = harness_.show(a1)["runs"][0]["run_id"].get<std::string>();
  EXPECT_NE(text.find(fmt::format("/users/{}/{}", name_of("alice"), run_id)), std::string::npos) << text;
  EXPECT_TRUE(fs::is_directory(cg.dir() + "/users/" + name_of("alice")));
  EXPECT_TRUE(wait_until([&] { return !fs::exists(cg.dir() + "/users/" + name_of("alice") + "/" + run_id); }))
      << "its cgroup is removed at its cleanup";
  harness_.stop();
}

// A log the job's user replaced by a link is served as empty: the root daemon never reads the
// file the link names.
TEST_F(Lab, ALogReplacedByALinkIsNeverFollowedByTheDaemon) {
  start_box();
  const std::string secret = harness_.path("root-secret");
  std::ofstream(secret) << "root's secret\n";
  fs::permissions(secret, fs::perms::owner_read | fs::perms::owner_write);
  int64_t b1 = submit("bob", "b1", fmt::format(
      "echo before; rm \"$GPUQ_RUN_DIR/output.log\"; ln -s {} \"$GPUQ_RUN_DIR/output.log\"", secret));
  ASSERT_TRUE(harness_.wait_for(b1, [](const nlohmann::json& j) { return j["state"] == "succeeded"; }))
      << harness_.show(b1).dump();
  ASSERT_TRUE(fs::is_symlink(fmt::format("{}/jobs/{}/run-1/output.log", harness_.home(), b1)));
  auto log = as("bob", {"logs", std::to_string(b1)});
  EXPECT_EQ(log.out.find("root's secret"), std::string::npos) << log.out;
  auto admins = as("carol", {"logs", std::to_string(b1)});
  EXPECT_EQ(admins.out.find("root's secret"), std::string::npos) << admins.out;
}

}  // namespace
}  // namespace gpuq::testing
