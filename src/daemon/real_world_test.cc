// SPDX-License-Identifier: Apache-2.0
// The real World's timers and shims: a real io_context, real processes.
#include "daemon/real_world.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <algorithm>
#include <thread>
#include <limits>

#include "base/time.h"
#include "os/boot_clock.h"
#include "os/process.h"
#include "store/store.h"

namespace gpuq::daemon {
namespace {

namespace asio = boost::asio;

class RealWorldTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpuq-world-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    auto store = store::Store::open((dir_ / "gpuq.db").string(), false);
    ASSERT_TRUE(store);
    store_ = std::move(*store);
    world_ = std::make_unique<RealWorld>(ioc_, *store_, RealWorldOptions{});
  }
  void TearDown() override {
    world_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  // Runs the actor's loop until `done` (work from other threads arrives meanwhile), at most
  // 10 s; whether it is done.
  bool run_loop_until(const std::function<bool()>& done) {
    auto busy = asio::make_work_guard(ioc_);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      ioc_.restart();
      ioc_.run_one_for(std::chrono::milliseconds(10));
    }
    return done();
  }
  // The run directory of job `job`'s first run, made with a spec of `true`.
  std::string true_run_dir(int job) {
    runner::RunSpec spec;
    spec.argv = {"true"};
    spec.cwd = (dir_ / "jobs" / std::to_string(job) / "run-1").string();
    EXPECT_TRUE(world_->create_run_dir(spec.cwd, spec));
    return spec.cwd;
  }
  asio::io_context ioc_;
  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<RealWorld> world_;
};

TEST_F(RealWorldTest, ATimerFarAwayNeitherOverflowsNorFires) {
  auto far = world_->make_timer();
  auto near = world_->make_timer();
  bool far_fired = false, near_fired = false;
  // Milliseconds that overflow when turned into the steady clock's nanoseconds.
  far->arm(wall_now_ms() + (int64_t{1} << 61), [&] { far_fired = true; });
  far->arm(std::numeric_limits<int64_t>::max(), [&] { far_fired = true; });
  near->arm(wall_now_ms() + 20, [&] { near_fired = true; });
  while (!near_fired) ioc_.run_one();
  ioc_.poll();
  EXPECT_FALSE(far_fired);
}

TEST_F(RealWorldTest, ATimerInThePastFiresOnTheNextTurnNotInsideArm) {
  auto timer = world_->make_timer();
  bool fired = false;
  timer->arm(std::numeric_limits<int64_t>::min(), [&] { fired = true; });
  EXPECT_FALSE(fired);
  ioc_.run_one();
  EXPECT_TRUE(fired);
}

TEST_F(RealWorldTest, ACancelledOrReplacedTimerNeverFiresItsOldCallback) {
  auto timer = world_->make_timer();
  int first = 0, second = 0;
  timer->arm(wall_now_ms(), [&] { ++first; });
  timer->arm(wall_now_ms() + 10, [&] { ++second; });
  while (second == 0) ioc_.run_one();
  timer->arm(wall_now_ms(), [&] { ++first; });
  timer->cancel();
  ioc_.poll();
  EXPECT_EQ(first, 0);
  EXPECT_EQ(second, 1);
}

TEST_F(RealWorldTest, AnAdoptedProcessIsSignalledThroughItsPidfdOnly) {
  pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  auto ticks = os::process_start_ticks(child);
  ASSERT_TRUE(ticks);
  EXPECT_FALSE(world_->adopt_shim(child, *ticks + 1)) << "another start time: not that process";
  auto shim = world_->adopt_shim(child, *ticks);
  ASSERT_TRUE(shim) << shim.error().message;
  bool exited = false;
  (*shim)->on_exit([&] { exited = true; });
  EXPECT_EQ((*shim)->signal(SIGTERM), os::SignalResult::kSent);
  while (!exited) ioc_.run_one();
  EXPECT_EQ((*shim)->signal(SIGTERM), os::SignalResult::kGone) << "exited (and reaped): never a reused pid";
  EXPECT_EQ(::waitpid(child, nullptr, WNOHANG), -1) << "already reaped by the exit watch";
}

// A start takes the shim kept waiting (runner/spare_shim.h) instead of spawning one, and the next
// is started once the actor's turn is over, never inside the start.
TEST_F(RealWorldTest, AStartTakesTheWaitingSpareShimAndTheNextIsStartedAfterTheTurn) {
  RealWorldOptions options;
  options.shim_executable = GPUQ_SHIM_FOR_TEST;
  world_ = std::make_unique<RealWorld>(ioc_, *store_, options);
  EXPECT_EQ(world_->spare_shim_pid(), 0) << "none before the first start";
  auto run = [&](int number) {
    runner::RunSpec spec;
    spec.argv = {"sh", "-c", "echo $$ > ran"};
    spec.cwd = (dir_ / "jobs" / "1" / ("run-" + std::to_string(number))).string();
    EXPECT_TRUE(world_->create_run_dir(spec.cwd, spec));
    return spec.cwd;
  };
  std::string first_dir = run(1);
  auto first = world_->launch_shim(first_dir, "1-1-a", "");
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(world_->spare_shim_pid(), 0) << "started after the turn, not inside the start";
  // Started on the spare's own thread and kept by the actor: the loop runs until it is.
  auto spare_after = [&](pid_t previous) {
    run_loop_until([&] { return world_->spare_shim_pid() != previous; });
    return world_->spare_shim_pid();
  };
  pid_t spare = spare_after(0);
  ASSERT_GT(spare, 0);
  EXPECT_NE(spare, (*first)->pid());

  std::string second_dir = run(2);
  auto second = world_->launch_shim(second_dir, "1-2-b", "");
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ((*second)->pid(), spare) << "the waiting spare, assigned this run";
  EXPECT_EQ((*second)->start_ticks(), *os::process_start_ticks(spare));
  bool exited = false;
  (*second)->on_exit([&] { exited = true; });
  ASSERT_TRUE((*second)->release());
  while (!exited) ioc_.run_one();
  auto record = world_->read_exit_record(second_dir);
  ASSERT_TRUE(record) << record.error().message;
  EXPECT_EQ(record->exit_code, 0);
  EXPECT_TRUE(std::filesystem::exists(second_dir + "/ran")) << "it ran the run it was assigned";
  EXPECT_FALSE(std::filesystem::exists(first_dir + "/ran")) << "the first was never released";
  pid_t next = spare_after(0);
  EXPECT_GT(next, 0) << "refilled after the second start";
  EXPECT_NE(next, spare);
  first->reset();
  world_.reset();  // lets the waiting spare go and reaps it
  EXPECT_EQ(::waitpid(next, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

// With a spare per GPU, a burst of starts (a queue released onto idle GPUs) takes a waiting spare
// for each run and spawns none on the actor's thread; they are refilled afterwards.
TEST_F(RealWorldTest, ABurstOfStartsTakesOneWaitingSpareEach) {
  RealWorldOptions options;
  options.shim_executable = GPUQ_SHIM_FOR_TEST;
  options.spare_shims = 3;
  world_ = std::make_unique<RealWorld>(ioc_, *store_, options);
  auto wait_for_spares = [&](size_t count) {
    run_loop_until([&] { return world_->spare_shims_waiting() >= count; });
    return world_->spare_shims_waiting();
  };
  std::vector<std::unique_ptr<ShimProcess>> shims;
  auto first = world_->launch_shim(true_run_dir(1), "1-1-a", "");
  ASSERT_TRUE(first) << first.error().message;
  shims.push_back(std::move(*first));
  ASSERT_EQ(wait_for_spares(3), 3u) << "three started after the first start";
  for (int number = 2; number <= 4; ++number) {
    pid_t expected = world_->spare_shim_pid();
    auto shim = world_->launch_shim(true_run_dir(number), "1-" + std::to_string(number), "");
    ASSERT_TRUE(shim) << shim.error().message;
    EXPECT_EQ((*shim)->pid(), expected) << "start " << number << " took the oldest spare";
    shims.push_back(std::move(*shim));
  }
  EXPECT_EQ(world_->spare_shims_waiting(), 0u) << "each start took one; none was spawned instead";
  EXPECT_EQ(wait_for_spares(3), 3u) << "refilled after the burst";
  shims.clear();
  world_.reset();
}

// This process's children waiting as spare shims (`gpuq-shim shim - 3`).
std::vector<pid_t> waiting_spares() {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    pid_t parent = 0;
    rest >> state >> parent;
    if (parent != ::getpid() || state == 'Z') continue;
    std::ifstream cmdline(entry.path() / "cmdline");
    std::string argv((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    if (argv.find(std::string("shim\0-\0", 7)) != std::string::npos) out.push_back(std::stoi(name));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Spares left too old to hand out (a maximum age too short to renew them): a start spawns its
// own shim, and the old spares are killed and reaped off its path (on the spares' thread), then
// replaced.
TEST_F(RealWorldTest, SparesTooOldAfterAnIdleSpellAreReapedAndReplaced) {
  RealWorldOptions options;
  options.shim_executable = GPUQ_SHIM_FOR_TEST;
  options.spare_shims = 2;
  // Under RealWorld::kShortestRenewedSpareAgeMs: no renewal, so only take() meets their age.
  // Ticks are 10 ms apart: well above a fresh spare's age.
  options.spare_max_age_ms = 99;
  world_ = std::make_unique<RealWorld>(ioc_, *store_, options);
  auto first = world_->launch_shim(true_run_dir(1), "1-1-a", "");
  ASSERT_TRUE(first) << first.error().message;
  std::vector<pid_t> old;
  ASSERT_TRUE(run_loop_until([&] {
    return world_->spare_shims_waiting() == 2 && (old = waiting_spares()).size() == 2;
  })) << world_->spare_shims_waiting() << " spares kept, " << old.size() << " seen waiting in /proc";
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  auto second = world_->launch_shim(true_run_dir(2), "1-2-b", "");
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(std::find(old.begin(), old.end(), (*second)->pid()), old.end()) << "a spare too old";
  EXPECT_TRUE(run_loop_until([&] {
    std::vector<pid_t> now = waiting_spares();
    return std::none_of(old.begin(), old.end(), [&](pid_t pid) {
      return std::find(now.begin(), now.end(), pid) != now.end() || ::kill(pid, 0) == 0;
    });
  })) << "the old spares are killed and reaped";
  EXPECT_TRUE(run_loop_until([&] { return world_->spare_shims_waiting() == 2; })) << "and replaced";
  first->reset();
  second->reset();
  world_.reset();
}

// While nothing starts, the spares are replaced before they would be too old: after a quiet
// spell one young spare waits (not every one of the burst's), each is replaced before its
// maximum age by one started first, and the start takes it instead of spawning its own shim on
// the actor; the aged ones are killed and reaped.
TEST_F(RealWorldTest, AfterAQuietSpellOneSpareIsKeptYoungAndTheStartTakesIt) {
  RealWorldOptions options;
  options.shim_executable = GPUQ_SHIM_FOR_TEST;
  options.spare_shims = 2;
  const int64_t max_age_ms = 1500;  // renewed at 1125 ms of age (a lead of a quarter)
  options.spare_max_age_ms = max_age_ms;
  world_ = std::make_unique<RealWorld>(ioc_, *store_, options);
  auto first = world_->launch_shim(true_run_dir(1), "1-1-a", "");
  ASSERT_TRUE(first) << first.error().message;
  std::vector<pid_t> burst;
  ASSERT_TRUE(run_loop_until([&] {
    return world_->spare_shims_waiting() == 2 && (burst = waiting_spares()).size() == 2;
  }));
  auto gone = [](const std::vector<pid_t>& pids) {
    std::vector<pid_t> now = waiting_spares();
    return std::none_of(pids.begin(), pids.end(), [&](pid_t pid) {
      return std::find(now.begin(), now.end(), pid) != now.end() || ::kill(pid, 0) == 0;
    });
  };
  // The loop runs the renewal's timer: the burst's two age out, one young spare replaces them.
  pid_t young = 0;
  ASSERT_TRUE(run_loop_until([&] {
    young = world_->spare_shim_pid();
    return gone(burst) && young > 0 && world_->spare_shims_waiting() == 1;
  })) << "the burst's spares killed and reaped, one young one kept";
  EXPECT_EQ(std::find(burst.begin(), burst.end(), young), burst.end());
  auto young_ticks = os::process_start_ticks(young);
  ASSERT_TRUE(young_ticks);
  // Over its whole life: never more than one waits, and it is replaced before its maximum age.
  size_t most_waiting = 0;
  ASSERT_TRUE(run_loop_until([&] {
    most_waiting = std::max(most_waiting, world_->spare_shims_waiting());
    return world_->spare_shim_pid() != young;
  }));
  static const int64_t ticks_per_second = ::sysconf(_SC_CLK_TCK);
  const int64_t age_ms =
      os::boot_clock_ms() - static_cast<int64_t>(*young_ticks) * 1000 / ticks_per_second;
  EXPECT_LT(age_ms, max_age_ms) << "replaced while it could still be handed out";
  EXPECT_EQ(most_waiting, 1u) << "one kept young while idle, not the capacity";
  EXPECT_GT(world_->spare_shim_pid(), 0) << "its replacement was kept before it went";
  ASSERT_TRUE(run_loop_until([&] { return gone({young}); })) << "killed and reaped";
  pid_t waiting = world_->spare_shim_pid();
  auto second = world_->launch_shim(true_run_dir(2), "1-2-b", "");
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ((*second)->pid(), waiting) << "the start took the young spare";
  EXPECT_TRUE(run_loop_until([&] { return world_->spare_shims_waiting() == 2; }))
      << "a start refills to the capacity";
  first->reset();
  second->reset();
  world_.reset();
}

// A spare that could not be started while none waits is tried again a lead later by the
// renewal, not only at the next start: the idle daemon gets its young spare back.
TEST_F(RealWorldTest, ASpareThatCouldNotBeStartedIsTriedAgainWhileIdle) {
  const std::string shim = (dir_ / "gpuq-shim").string();
  std::filesystem::copy_file(GPUQ_SHIM_FOR_TEST, shim);
  RealWorldOptions options;
  options.shim_executable = shim;
  options.spare_max_age_ms = 1500;  // a retry 375 ms after a failed spawn
  world_ = std::make_unique<RealWorld>(ioc_, *store_, options);
  auto first = world_->launch_shim(true_run_dir(1), "1-1-a", "");
  ASSERT_TRUE(first) << first.error().message;
  ASSERT_TRUE(run_loop_until([&] { return world_->spare_shims_waiting() == 1; }));
  // The second start takes the spare; its refill fails: the binary is gone.
  std::filesystem::rename(shim, shim + ".away");
  auto second = world_->launch_shim(true_run_dir(2), "1-2-b", "");
  ASSERT_TRUE(second) << second.error().message;
  ASSERT_TRUE(run_loop_until([&] { return world_->spare_shims_starting() == 0; }));
  EXPECT_EQ(world_->spare_shims_waiting(), 0u) << "its refill could not start one";
  // No start follows; once the binary is back, the renewal's retry keeps a spare.
  std::filesystem::rename(shim + ".away", shim);
  EXPECT_TRUE(run_loop_until([&] { return world_->spare_shims_waiting() == 1; }))
      << "the failed spawn was tried again while idle";
  first->reset();
  second->reset();
  world_.reset();
}

TEST_F(RealWorldTest, ARunDirectoryIsNeverReused) {
  runner::RunSpec spec;
  spec.argv = {"true"};
  std::string dir = (dir_ / "jobs" / "1" / "run-1").string();
  ASSERT_TRUE(world_->create_run_dir(dir, spec));
  auto again = world_->create_run_dir(dir, spec);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, Code::kConflict);
  EXPECT_EQ(std::filesystem::status(dir).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_all);
}

TEST_F(RealWorldTest, TreesAreMeasuredOffTheActorAndRemovedOnlyWhenAsked) {
  auto make_tree = [&](const std::string& name) {
    std::filesystem::path root = dir_ / name;
    std::filesystem::create_directories(root / "run-1");
    std::ofstream(root / "script") << std::string(100, 'x');
    std::ofstream(root / "run-1" / "output.log") << std::string(4000, 'y');
    return root.string();
  };
  std::string a = make_tree("a"), b = make_tree("b");
  std::string missing = (dir_ / "never-made").string();
  auto measure = [&](bool remove) {
    int64_t bytes = -1;
    std::thread::id answered_on;
    world_->measure_trees({a, b, missing}, remove, [&](int64_t n) {
      bytes = n;
      answered_on = std::this_thread::get_id();
    });
    EXPECT_EQ(bytes, -1) << "answered inside the call, on the actor's thread";
    ioc_.restart();
    auto busy = asio::make_work_guard(ioc_);  // run_one_for waits for the worker's answer
    while (bytes < 0 && ioc_.run_one_for(std::chrono::seconds(10)) > 0) {
    }
    EXPECT_EQ(answered_on, std::this_thread::get_id()) << "the answer comes back to the actor";
    return bytes;
  };
  EXPECT_EQ(measure(false), 2 * 4100);
  EXPECT_TRUE(std::filesystem::exists(a));
  EXPECT_EQ(measure(true), 2 * 4100);
  EXPECT_FALSE(std::filesystem::exists(a));
  EXPECT_FALSE(std::filesystem::exists(b));
}

}  // namespace
}  // namespace gpuq::daemon
