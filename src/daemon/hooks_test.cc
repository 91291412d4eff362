// SPDX-License-Identifier: Apache-2.0
#include "daemon/hooks.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "daemon/hook_delivery.h"

namespace gpuq::daemon {
namespace {

namespace asio = boost::asio;
using std::chrono::steady_clock;

TEST(HookMatches, GlobsAgainstTheKind) {
  EXPECT_TRUE(hook_matches({"*"}, "job.started"));
  EXPECT_TRUE(hook_matches({"job.*"}, "job.started"));
  EXPECT_FALSE(hook_matches({"job.*"}, "jobs.started"));
  EXPECT_FALSE(hook_matches({"job.*"}, "daemon.started"));
  EXPECT_TRUE(hook_matches({"daemon.started", "job.fail*"}, "job.failed"));
  EXPECT_TRUE(hook_matches({"queue.idle_with_work"}, "queue.idle_with_work"));
  EXPECT_FALSE(hook_matches({"queue.idle"}, "queue.idle_with_work"));
  EXPECT_TRUE(hook_matches({"*.foreign"}, "resource.foreign"));
  EXPECT_FALSE(hook_matches({}, "job.started"));
}

TEST(HookRetryDelay, DoublesFromMinToMax) {
  HookConfig hook;
  hook.retry_min_ms = 1'000;
  hook.retry_max_ms = 5'000;
  EXPECT_EQ(hook_retry_delay_ms(hook, 1), 1'000);
  EXPECT_EQ(hook_retry_delay_ms(hook, 2), 2'000);
  EXPECT_EQ(hook_retry_delay_ms(hook, 3), 4'000);
  EXPECT_EQ(hook_retry_delay_ms(hook, 4), 5'000);
  EXPECT_EQ(hook_retry_delay_ms(hook, 1'000'000), 5'000);  // no overflow after many failures
  hook.retry_max_ms = hook.retry_min_ms;
  EXPECT_EQ(hook_retry_delay_ms(hook, 7), 1'000);
}

Event sample_event() {
  Event event;
  event.seq = 42;
  event.time_ms = 1'795'949'736'123;
  event.kind = "job.failed";
  event.job = 7;
  event.data = {{"exit_code", 3}};
  return event;
}

TEST(HookEventEnvironment, NamesEveryFieldAndLeavesMissingOnesEmpty) {
  auto env = hook_event_environment("mail", sample_event());
  std::vector<std::string> expected = {"GPUQ_HOOK=mail",
                                       "GPUQ_EVENT_SEQ=42",
                                       "GPUQ_EVENT_KIND=job.failed",
                                       "GPUQ_EVENT_TIME=2026-11-29T10:55:36.123Z",
                                       "GPUQ_EVENT_JOB=7",
                                       "GPUQ_EVENT_RUN=",
                                       "GPUQ_EVENT_DATA={\"exit_code\":3}"};
  EXPECT_EQ(env, expected);
  auto body = nlohmann::json::parse(hook_event_body(sample_event()));
  EXPECT_EQ(body["seq"], 42);
  EXPECT_EQ(body["kind"], "job.failed");
  EXPECT_EQ(body["job"], 7);
  EXPECT_TRUE(body["run"].is_null());
  EXPECT_EQ(body["data"]["exit_code"], 3);
}

TEST(HookEventEnvironment, HugeDataIsOnStdinOnlyAndBadUtf8IsReplaced) {
  Event event = sample_event();
  event.data = {{"command", std::string("python \xff\xfe train.py")}};
  auto body = nlohmann::json::parse(hook_event_body(event));
  EXPECT_EQ(body["data"]["command"], "python \xef\xbf\xbd\xef\xbf\xbd train.py");
  event.data = {{"blob", std::string(kMaxHookDataVariable, 'x')}};
  auto env = hook_event_environment("h", event);
  EXPECT_EQ(env.back(), "GPUQ_EVENT_DATA=");
  EXPECT_GT(hook_event_body(event).size(), kMaxHookDataVariable);
}

TEST(HookStatusJson, TimesAreTextOrNull) {
  HookStatus status;
  status.name = "mail";
  status.type = "url";
  status.target = "http://127.0.0.1:1/x";
  status.events = {"job.*"};
  status.cursor = 5;
  status.last_seq = 9;
  status.lag = 4;
  status.last_error = "POST answered HTTP 500";
  status.last_error_at_ms = 1'795'949'736'123;
  auto json = hook_status_to_json(status);
  EXPECT_EQ(json["lag"], 4);
  EXPECT_EQ(json["last_error"], "POST answered HTTP 500");
  EXPECT_EQ(json["last_error_at"], "2026-11-29T10:55:36.123Z");
  EXPECT_TRUE(json["retry_at"].is_null());
  EXPECT_TRUE(json["failing_since"].is_null());
  EXPECT_TRUE(hook_status_to_json(HookStatus{})["last_error"].is_null());
}

TEST(HookStatus, ATargetIsShownWithoutWhatMayBeASecret) {
  auto target = [](const std::string& url, const std::string& command) {
    HookConfig hook;
    hook.url = url;
    hook.command = command;
    return redacted_hook_target(hook);
  };
  EXPECT_EQ(target("https://hooks.slack.com/services/T0/B0/SECRET", ""), "https://hooks.slack.com/…");
  EXPECT_EQ(target("http://bot:pw@127.0.0.1:8080/gpuq?token=abc", ""), "http://127.0.0.1:8080/…");
  EXPECT_EQ(target("http://127.0.0.1:8080/", ""), "http://127.0.0.1:8080");
  EXPECT_EQ(target("http://127.0.0.1:8080?key=1", ""), "http://127.0.0.1:8080/…");
  EXPECT_EQ(target("", "curl -H 'Authorization: Bearer S3CRET' https://x"), "curl …");
  EXPECT_EQ(target("", "  /opt/notify.sh"), "/opt/notify.sh");
}

TEST(DeliverByCommand, FailureNamesTheExitStatusAndTheTailOfStderr) {
  HookConfig hook;
  hook.name = "h";
  hook.command = "cat >/dev/null; echo first >&2; echo 'receiver down' >&2; exit 3";
  auto delivered = deliver_by_command(hook, sample_event(), -1);
  ASSERT_FALSE(delivered);
  EXPECT_NE(delivered.error().message.find("exit status 3"), std::string::npos)
      << delivered.error().message;
  EXPECT_NE(delivered.error().message.find("first receiver down"), std::string::npos)
      << delivered.error().message;
}

// A hook is the daemon's: it runs as the daemon's user with the daemon's environment and the
// event's variables, never as a job's submitter nor with a job's environment (a submitter's
// LD_PRELOAD or PATH in a root hook would be root code execution).
TEST(DeliverByCommand, RunsAsTheDaemonWithoutAnyJobsEnvironment) {
  std::string out = (std::filesystem::temp_directory_path() /
                     ("gpuq-hook-identity-" + std::to_string(::getpid()))).string();
  HookConfig hook;
  hook.name = "h";
  hook.command = "cat >/dev/null; { id -u; env; } > " + out;
  Event event = sample_event();
  event.data = {{"env", {{"LD_PRELOAD", "/tmp/evil.so"}}}, {"user", "ann"}};
  ASSERT_TRUE(deliver_by_command(hook, event, -1));
  std::ifstream file(out);
  std::stringstream text;
  text << file.rdbuf();
  std::filesystem::remove(out);
  std::string seen = text.str();
  EXPECT_EQ(seen.substr(0, seen.find('\n')), std::to_string(::geteuid()));
  EXPECT_EQ(seen.find("\nLD_PRELOAD="), std::string::npos) << seen;
  EXPECT_NE(seen.find("GPUQ_EVENT_KIND=job.failed"), std::string::npos) << seen;
}

TEST(DeliverByCommand, TimeoutIsAFailure) {
  HookConfig hook;
  hook.name = "h";
  hook.command = "sleep 30";
  hook.timeout_ms = 200;
  auto delivered = deliver_by_command(hook, sample_event(), -1);
  ASSERT_FALSE(delivered);
  EXPECT_NE(delivered.error().message.find("timed out"), std::string::npos)
      << delivered.error().message;
}

TEST(DeliverByUrl, NothingListeningIsAFailure) {
  init_url_delivery();
  HookConfig hook;
  hook.name = "h";
  hook.url = "http://127.0.0.1:1/nothing";
  hook.timeout_ms = 5'000;
  std::atomic<bool> cancel{false};
  auto delivered = deliver_by_url(hook, sample_event(), cancel);
  ASSERT_FALSE(delivered);
  EXPECT_NE(delivered.error().message.find("POST failed"), std::string::npos)
      << delivered.error().message;
}

// A HookRunner on a real store, with an actor thread that owns the writable connection.
class HookRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpuq-hooks-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    database_ = (dir_ / "gpuq.db").string();
    open_actor();
  }
  void TearDown() override {
    runner_.reset();
    stop_actor();
    std::filesystem::remove_all(dir_);
  }
  void open_actor() {
    auto opened = store::Store::open(database_, false);
    ASSERT_TRUE(opened) << opened.error().message;
    store_ = std::move(*opened);
  }
  void start_actor() {
    actor_ = std::make_unique<asio::io_context>(1);
    guard_ = std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(
        actor_->get_executor());
    actor_thread_ = std::thread([this] { actor_->run(); });
  }
  void stop_actor() {
    if (!actor_) return;
    guard_.reset();
    actor_->stop();
    if (actor_thread_.joinable()) actor_thread_.join();
  }
  // Runs `fn` on the actor's thread and waits for it.
  template <class Fn>
  void on_actor(Fn fn) {
    std::promise<void> done;
    asio::post(*actor_, [&] {
      fn();
      done.set_value();
    });
    done.get_future().wait();
  }
  // Appends events of the given kinds (on the actor) and tells the runner; returns the seqs.
  std::vector<int64_t> append(const std::vector<std::string>& kinds) {
    std::vector<int64_t> seqs;
    on_actor([&] {
      for (const std::string& kind : kinds) {
        Event event;
        event.time_ms = 1000;
        event.kind = kind;
        auto seq = store_->append_event(event);
        ASSERT_TRUE(seq) << seq.error().message;
        seqs.push_back(*seq);
      }
    });
    if (runner_ && !seqs.empty()) runner_->notify(seqs.back());
    return seqs;
  }
  void make_runner(std::vector<HookConfig> hooks) {
    HookRunnerOptions options;
    options.database = database_;
    options.poll_interval = Millis{5'000};  // notify() must wake, not the poll
    options.stop_grace = Millis{300};
    runner_ = std::make_unique<HookRunner>(std::move(hooks), *actor_, *store_, options);
  }
  // Appends one line per delivery: "HOOK SEQ KIND" from the environment, then stdin.
  HookConfig file_hook(const std::string& name, std::vector<std::string> events) {
    HookConfig hook;
    hook.name = name;
    hook.events = std::move(events);
    hook.command = "read -r body; echo \"$GPUQ_HOOK $GPUQ_EVENT_SEQ $GPUQ_EVENT_KIND $body\" >> " +
                   (dir_ / (name + ".log")).string();
    hook.retry_min_ms = 10;
    hook.retry_max_ms = 40;
    return hook;
  }
  std::vector<std::string> lines(const std::string& name) const {
    std::ifstream in(dir_ / (name + ".log"));
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
  bool wait_until(const std::function<bool()>& done, Millis limit = Millis{20'000}) {
    auto deadline = steady_clock::now() + limit;
    while (!done()) {
      if (steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(Millis{10});
    }
    return true;
  }
  store::Store::HookCursor stored_cursor(const std::string& name) {
    store::Store::HookCursor found;
    on_actor([&] {
      auto cursors = store_->hook_cursors();
      ASSERT_TRUE(cursors);
      for (const auto& cursor : *cursors) {
        if (cursor.name == name) found = cursor;
      }
    });
    return found;
  }

  std::filesystem::path dir_;
  std::string database_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<asio::io_context> actor_;
  std::unique_ptr<asio::executor_work_guard<asio::io_context::executor_type>> guard_;
  std::thread actor_thread_;
  std::unique_ptr<HookRunner> runner_;
};

TEST_F(HookRunnerTest, DeliversMatchingEventsInOrderAndCommitsTheCursor) {
  start_actor();
  make_runner({file_hook("jobs", {"job.*"})});
  on_actor([&] { ASSERT_TRUE(runner_->load()); });
  runner_->start();
  auto seqs = append({"job.submitted", "daemon.started", "job.started", "job.succeeded"});
  ASSERT_TRUE(wait_until([&] { return lines("jobs").size() == 3; }));
  auto got = lines("jobs");
  EXPECT_TRUE(got[0].starts_with("jobs " + std::to_string(seqs[0]) + " job.submitted {"));
  EXPECT_TRUE(got[1].starts_with("jobs " + std::to_string(seqs[2]) + " job.started {"));
  EXPECT_TRUE(got[2].starts_with("jobs " + std::to_string(seqs[3]) + " job.succeeded {"));
  EXPECT_NE(got[2].find("\"seq\":" + std::to_string(seqs[3])), std::string::npos) << got[2];
  ASSERT_TRUE(wait_until([&] { return stored_cursor("jobs").seq == seqs[3]; }));
  EXPECT_EQ(stored_cursor("jobs").delivered, 3);
  auto statuses = runner_->statuses();
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_EQ(statuses[0].lag, 0);
  EXPECT_EQ(statuses[0].delivered, 3);
  EXPECT_EQ(statuses[0].type, "command");
}

TEST_F(HookRunnerTest, ANewHookStartsAtTheEndOfTheLog) {
  start_actor();
  append({"job.submitted", "job.started"});
  make_runner({file_hook("late", {"*"})});
  on_actor([&] { ASSERT_TRUE(runner_->load()); });
  runner_->start();
  auto seqs = append({"job.succeeded"});
  ASSERT_TRUE(wait_until([&] { return lines("late").size() == 1; }));
  EXPECT_TRUE(lines("late")[0].starts_with("late " + std::to_string(seqs[0]) + " "));
}

TEST_F(HookRunnerTest, AFailingReceiverIsRetriedWithTheSameEventNeverSkipping) {
  start_actor();
  // Fails twice (a counter file), then succeeds: the event arrives once, after the failures.
  HookConfig hook = file_hook("flaky", {"*"});
  std::string counter = (dir_ / "count").string();
  hook.command = "n=$(cat " + counter + " 2>/dev/null || echo 0); echo $((n+1)) > " + counter +
                 "; if [ $n -lt 2 ]; then echo 'not yet' >&2; exit 5; fi; " + hook.command;
  make_runner({hook});
  on_actor([&] { ASSERT_TRUE(runner_->load()); });
  runner_->start();
  auto seqs = append({"job.submitted", "job.started"});
  ASSERT_TRUE(wait_until([&] { return lines("flaky").size() == 2; }));
  auto got = lines("flaky");
  EXPECT_TRUE(got[0].starts_with("flaky " + std::to_string(seqs[0]) + " ")) << got[0];
  EXPECT_TRUE(got[1].starts_with("flaky " + std::to_string(seqs[1]) + " ")) << got[1];
  auto status = runner_->statuses()[0];
  EXPECT_EQ(status.failures, 0);
  EXPECT_NE(status.last_error.find("exit status 5"), std::string::npos) << status.last_error;
  EXPECT_NE(status.last_error.find("not yet"), std::string::npos) << status.last_error;
  ASSERT_TRUE(wait_until([&] { return stored_cursor("flaky").seq == seqs[1]; }));
  EXPECT_NE(stored_cursor("flaky").last_error.find("exit status 5"), std::string::npos);
}

TEST_F(HookRunnerTest, AStoredCursorResumesAfterARestart) {
  start_actor();
  make_runner({file_hook("resume", {"*"})});
  on_actor([&] { ASSERT_TRUE(runner_->load()); });
  runner_->start();
  auto first = append({"job.submitted"});
  ASSERT_TRUE(wait_until([&] { return stored_cursor("resume").seq == first[0]; }));
  runner_->stop();
  runner_.reset();
  auto missed = append({"job.started", "job.succeeded"});  // while no runner runs
  make_runner({file_hook("resume", {"*"})});
  on_actor([&] { ASSERT_TRUE(runner_->load()); });
  runner_->start();
  ASSERT_TRUE(wait_until([&] { return lines("resume").size() == 3; }));
  auto got = lines("resume");
  EXPECT_TRUE(got[1].starts_with("resume " + std::to_string(missed[0]) + " ")) << got[1];
  EXPECT_TRUE(got[2].starts_with("resume " + std::to_string(missed[1]) + " ")) << got[2];
}

TEST_F(HookRunnerTest, StopEndsABackoffAndCutsAHungCommandShort) {
  start_actor();
  HookConfig hung = file_hook("hung", {"*"});
  hung.command = "sleep 30";
  hung.timeout_ms = 60'000;
  HookConfig down = file_hook("down", {"*"});
  down.command = "exit 1";
  down.retry_min_ms = 60'000;
  down.retry_max_ms = 60'000;
  make_runner({hung, down});
  on_actor([&] { ASSERT_TRUE(runner_->load()); });
  runner_->start();
  append({"job.submitted"});
  ASSERT_TRUE(wait_until([&] { return runner_->statuses()[1].retry_at_ms > 0; }));
  auto started = steady_clock::now();
  runner_->stop();
  EXPECT_LT(steady_clock::now() - started, std::chrono::seconds(5));
  auto statuses = runner_->statuses();
  EXPECT_EQ(statuses[0].lag, 1);          // not delivered: it comes again at the next start
  EXPECT_EQ(statuses[0].last_error, "");  // cut short by the stop, which is no failure
}

TEST_F(HookRunnerTest, CommitAfterStopWritesWhatTheActorCouldNot) {
  start_actor();
  make_runner({file_hook("late-commit", {"*"})});
  on_actor([&] { ASSERT_TRUE(runner_->load()); });
  stop_actor();  // posted commits will never run
  runner_->start();
  // No actor to append through: write with the store directly, as nothing else uses it now.
  Event event;
  event.kind = "job.submitted";
  auto seq = store_->append_event(event);
  ASSERT_TRUE(seq);
  runner_->notify(*seq);
  ASSERT_TRUE(wait_until([&] { return lines("late-commit").size() == 1; }));
  ASSERT_TRUE(wait_until([&] { return runner_->statuses()[0].lag == 0; }));
  runner_->stop();
  ASSERT_TRUE(runner_->commit_after_stop());
  auto cursors = store_->hook_cursors();
  ASSERT_TRUE(cursors);
  ASSERT_EQ(cursors->size(), 1u);
  EXPECT_EQ((*cursors)[0].seq, *seq);
  EXPECT_EQ((*cursors)[0].delivered, 1);
}

}  // namespace
}  // namespace gpuq::daemon
