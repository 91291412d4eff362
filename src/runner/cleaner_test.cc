// SPDX-License-Identifier: Apache-2.0
// The Cleaner over the real clock and real process trees: daemons that escaped their run's
// process group with setsid are found by their GPUQ_RUN_ID and killed. Each test has its own
// marker; TearDown kills whatever still carries it and reaps (this process is a child
// subreaper, so the escaped processes become its children instead of lingering as zombies of
// a pid 1 that may not reap).
#include "runner/cleaner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <future>
#include <optional>
#include <thread>

#include "os/process.h"

extern char** environ;

namespace gpuq::runner {
namespace {

using namespace std::chrono_literals;

constexpr auto kDeadline = 60s;  // generous: outcomes only, never durations

class CleanerRealTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ::prctl(PR_SET_CHILD_SUBREAPER, 1); }

  void SetUp() override {
    static std::atomic<int> counter{0};
    marker_ = fmt::format("cleaner-test-{}-{}-{}", ::getpid(), counter++,
                          std::chrono::steady_clock::now().time_since_epoch().count());
  }

  void TearDown() override {
    // Kill every process with this test's marker until none is left, then reap our children.
    auto table = os::make_linux_process_table();
    auto give_up = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < give_up) {
      auto left = marked(*table);
      if (left.empty()) break;
      for (const auto& f : left) (void)table->signal(f.pid, f.start_ticks, SIGKILL);
      reap();
      std::this_thread::sleep_for(10ms);
    }
    EXPECT_TRUE(marked(*table).empty()) << "processes with " << marker_ << " outlived the test";
    reap();
  }

  static void reap() {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
  }

  // The live (not zombie) processes that carry this test's marker.
  std::vector<os::ProcessFacts> marked(os::ProcessTable& table) const {
    std::vector<os::ProcessFacts> out;
    for (pid_t pid : table.pids()) {
      auto facts = table.facts(pid);
      if (!facts || facts->zombie) continue;
      if (table.env_value(pid, kRunMarkerVariable) == marker_) out.push_back(*facts);
    }
    return out;
  }

  // Starts `script` under bash with the marker in its environment, optionally in a new session.
  pid_t spawn(const std::string& script, bool new_session) {
    std::vector<std::string> env = {"PATH=/usr/bin:/bin",
                                    std::string(kRunMarkerVariable) + "=" + marker_};
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string bash = "/bin/bash", dash_c = "-c", body = script;
    char* argv[] = {bash.data(), dash_c.data(), body.data(), nullptr};
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    if (new_session) posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
    // No pipe of ours (a test runner's output capture) may be held by what the job leaves.
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    for (int fd : {0, 1, 2}) {
      posix_spawn_file_actions_addopen(&files, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0);
    }
    pid_t pid = 0;
    int rc = ::posix_spawn(&pid, argv[0], &files, &attr, argv, envp.data());
    posix_spawn_file_actions_destroy(&files);
    posix_spawnattr_destroy(&attr);
    EXPECT_EQ(rc, 0);
    return pid;
  }

  // Waits until `pred` holds or the deadline passes; returns whether it held.
  template <class Pred>
  static bool eventually(Pred pred, std::chrono::seconds limit = 20s) {
    auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      if (pred()) return true;
      std::this_thread::sleep_for(10ms);
    }
    return pred();
  }

  static bool gone(os::ProcessTable& table, pid_t pid, uint64_t ticks) {
    auto facts = table.facts(pid);
    return !facts || facts->zombie || facts->start_ticks != ticks;
  }

  // Cleans up after the run marked marker_ and returns the outcome.
  CleanupOutcome clean(uint64_t started_ticks, CleanupLimits limits = {20, 200, 30'000}) {
    Cleaner cleaner(os::make_linux_process_table(), limits);
    std::promise<CleanupOutcome> promise;
    auto future = promise.get_future();
    cleaner.add(CleanupTarget{42, marker_, started_ticks, std::nullopt, ""},
                [&promise](CleanupOutcome outcome) { promise.set_value(std::move(outcome)); });
    if (future.wait_for(kDeadline) != std::future_status::ready) {
      ADD_FAILURE() << "no outcome within the deadline";
      return CleanupOutcome{};
    }
    return future.get();
  }

  // The exit status of our child `pid`, waiting at most 20 s (a test must never hang on a
  // process that the code under test failed to kill; TearDown kills it).
  static std::optional<int> wait_exit(pid_t pid) {
    auto end = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < end) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) return status;
      std::this_thread::sleep_for(10ms);
    }
    return std::nullopt;
  }

  static bool names(const std::vector<StrayProcess>& list, pid_t pid) {
    for (const auto& p : list) {
      if (p.pid == pid) return true;
    }
    return false;
  }

  std::string marker_;
};

TEST_F(CleanerRealTest, EscapedSetsidDaemonIsKilledAndTheRunConfirmed) {
  auto table = os::make_linux_process_table();
  pid_t job = spawn("( setsid sleep 1000 & ) ; exit 0", false);
  auto started = os::process_start_ticks(job);  // readable until we reap it
  ASSERT_TRUE(started) << started.error().message;
  auto status = wait_exit(job);
  ASSERT_TRUE(status);
  ASSERT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);

  os::ProcessFacts escaped;
  ASSERT_TRUE(eventually([&] {
    for (const auto& f : marked(*table)) {
      if (table->cmdline(f.pid) == "sleep 1000") {
        escaped = f;
        return true;
      }
    }
    return false;
  })) << "the job's daemon never appeared";
  EXPECT_NE(::getsid(escaped.pid), ::getsid(0));  // it did escape our session

  auto outcome = clean(*started);
  EXPECT_EQ(outcome.key, 42);
  EXPECT_TRUE(outcome.confirmed);
  EXPECT_TRUE(names(outcome.killed, escaped.pid));
  EXPECT_TRUE(outcome.remaining.empty());
  EXPECT_TRUE(gone(*table, escaped.pid, escaped.start_ticks));
  EXPECT_TRUE(marked(*table).empty());
}

TEST_F(CleanerRealTest, DaemonIgnoringTermIsKilledAfterTheGrace) {
  auto table = os::make_linux_process_table();
  // Our own child (so we can see how it died), in a session of its own like an escaped daemon.
  pid_t daemon = spawn("trap '' TERM; exec sleep 1000", true);
  auto started = os::process_start_ticks(daemon);
  ASSERT_TRUE(started) << started.error().message;
  ASSERT_TRUE(eventually([&] { return table->cmdline(daemon) == "sleep 1000"; }))
      << "the trap was not in place";

  auto outcome = clean(*started);
  EXPECT_TRUE(outcome.confirmed);
  EXPECT_TRUE(names(outcome.killed, daemon));
  auto status = wait_exit(daemon);
  ASSERT_TRUE(status) << "still alive after the cleanup";
  ASSERT_TRUE(WIFSIGNALED(*status));
  EXPECT_EQ(WTERMSIG(*status), SIGKILL);
}

TEST_F(CleanerRealTest, DaemonForkingDuringTheSweepIsKilledBeforeConfirmation) {
  auto table = os::make_linux_process_table();
  // Forks a short-lived marked child every ~10 ms; bounded (at most 600 rounds, ~30 alive).
  pid_t daemon = spawn("for i in $(seq 600); do sleep 0.3 & sleep 0.01; done; wait", true);
  auto started = os::process_start_ticks(daemon);
  ASSERT_TRUE(started) << started.error().message;
  ASSERT_TRUE(eventually([&] { return marked(*table).size() >= 5; }));

  auto outcome = clean(*started);
  EXPECT_TRUE(outcome.confirmed);
  EXPECT_TRUE(names(outcome.killed, daemon));
  EXPECT_GE(outcome.killed_total, 2);
  // Confirmed means nothing with the marker is left, the forked children included.
  EXPECT_TRUE(marked(*table).empty());
  auto status = wait_exit(daemon);
  ASSERT_TRUE(status) << "still alive after the cleanup";
  EXPECT_TRUE(WIFSIGNALED(*status));
}

TEST_F(CleanerRealTest, OlderProcessWithTheMarkerIsLeftAlone) {
  auto table = os::make_linux_process_table();
  pid_t old = spawn("exec sleep 1000", true);
  ASSERT_TRUE(eventually([&] { return table->cmdline(old) == "sleep 1000"; }));
  auto old_ticks = os::process_start_ticks(old);
  ASSERT_TRUE(old_ticks);
  // The run "started" one tick after it.
  auto outcome = clean(*old_ticks + 1);
  EXPECT_TRUE(outcome.confirmed);
  EXPECT_TRUE(outcome.killed.empty());
  EXPECT_FALSE(gone(*table, old, *old_ticks));
}

// The thread itself, over a fake table: done runs for each cleanup, add works from inside
// done, and destruction with work pending is prompt and calls nothing.
TEST(Cleaner, ReportsEachCleanupAndStopsPromptlyWithWorkPending) {
  auto fake = std::make_unique<os::FakeProcessTable>();
  fake->add(500, 1, 1200, 1000, "stuck");
  fake->find(500)->unkillable = true;
  std::promise<CleanupOutcome> first, second;
  std::atomic<int> stuck_calls{0};
  auto start = std::chrono::steady_clock::now();
  {
    Cleaner cleaner(std::move(fake), CleanupLimits{5, 50, 600'000}, std::nullopt);
    cleaner.add(CleanupTarget{1, "stuck", 1000, std::nullopt, ""}, [&](CleanupOutcome) { ++stuck_calls; });
    cleaner.add(CleanupTarget{2, "clean", 1000, std::nullopt, ""}, [&](CleanupOutcome outcome) {
      first.set_value(std::move(outcome));
      cleaner.add(CleanupTarget{3, "also-clean", 1000, std::nullopt, ""},
                  [&](CleanupOutcome o) { second.set_value(std::move(o)); });
    });
    auto f1 = first.get_future();
    auto f2 = second.get_future();
    ASSERT_EQ(f1.wait_for(kDeadline), std::future_status::ready);
    ASSERT_EQ(f2.wait_for(kDeadline), std::future_status::ready);
    auto o1 = f1.get(), o2 = f2.get();
    EXPECT_EQ(o1.key, 2);
    EXPECT_TRUE(o1.confirmed);
    EXPECT_EQ(o2.key, 3);
    EXPECT_TRUE(o2.confirmed);
  }
  EXPECT_EQ(stuck_calls.load(), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);  // not the 600 s limit
}

}  // namespace
}  // namespace gpuq::runner
