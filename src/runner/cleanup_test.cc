// SPDX-License-Identifier: Apache-2.0
// The cleanup sweep against a fake process table and fake times: no real process, no sleep.
#include "runner/cleanup.h"

#include <gtest/gtest.h>

#include <csignal>
#include <map>
#include <string>

#include "os/process_table.h"

namespace gpuq::runner {
namespace {

using os::FakeProcessTable;

constexpr uid_t kUid = 1000;
constexpr uint64_t kRunStart = 1000;  // started_ticks of the run under test

class CleanupTest : public ::testing::Test {
 protected:
  CleanupTest() {
    // Some unrelated processes: system ones older than the run, a newer one without a marker,
    // one of another run, one of another user.
    table_.add(1, 0, 5, 0, "");
    table_.add(100, 1, 50, kUid, "");
    table_.add(2000, 1, 1500, kUid, "");
    table_.add(2001, 1, 1500, kUid, "other-run");
    table_.add(2002, 1, 1500, 0, "");
  }

  CleanupSweep make(CleanupLimits limits = {50, 1000, 10'000}) {
    return CleanupSweep(table_, limits, kUid);
  }
  static CleanupTarget target(int64_t key = 7, std::string run_id = "7-1-abc",
                              uint64_t started = kRunStart) {
    return CleanupTarget{key, std::move(run_id), started, std::nullopt, ""};
  }
  // Steps every poll from `from` until an outcome comes (or `until` passes).
  static std::vector<CleanupOutcome> run_until_done(CleanupSweep& sweep, int64_t& now,
                                                    int64_t until, int64_t poll = 50) {
    for (; now <= until; now += poll) {
      auto out = sweep.step(now);
      if (!out.empty()) return out;
    }
    return {};
  }
  // Sweeps for target() alone, with the default limits, until its outcome.
  std::vector<CleanupOutcome> sweep_target() {
    auto sweep = make();
    sweep.add(target(), 0);
    int64_t now = 0;
    return run_until_done(sweep, now, 5000);
  }

  FakeProcessTable table_;
};

TEST_F(CleanupTest, NothingEscapedConfirmsAfterTwoScansAPollApart) {
  auto sweep = make();
  sweep.add(target(), 0);
  EXPECT_FALSE(sweep.idle());
  EXPECT_EQ(sweep.next_scan_ms(), 0);  // the first scan is at once
  EXPECT_TRUE(sweep.step(0).empty());
  EXPECT_EQ(table_.scans(), 1);
  EXPECT_EQ(sweep.next_scan_ms(), 50);
  EXPECT_TRUE(sweep.step(49).empty());  // not due: no scan
  EXPECT_EQ(table_.scans(), 1);
  auto out = sweep.step(50);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].key, 7);
  EXPECT_TRUE(out[0].confirmed);
  EXPECT_EQ(out[0].scans, 2);
  EXPECT_TRUE(out[0].killed.empty());
  EXPECT_TRUE(out[0].remaining.empty());
  EXPECT_TRUE(sweep.idle());
  EXPECT_TRUE(table_.sent().empty());
  // Other runs' and other users' processes were never signalled; older ones never read.
  EXPECT_EQ(table_.env_reads(1), 0);
  EXPECT_EQ(table_.env_reads(100), 0);
  EXPECT_EQ(table_.env_reads(2002), 0);
  EXPECT_EQ(table_.env_reads(2000), 2);
}

TEST_F(CleanupTest, EscapedProcessThatDiesOnTermIsKilledThenConfirmed) {
  table_.add(500, 1, 1200, kUid, "7-1-abc", "python -m vllm.engine");
  auto sweep = make();
  sweep.add(target(), 0);
  EXPECT_TRUE(sweep.step(0).empty());
  EXPECT_FALSE(table_.has(500));
  EXPECT_EQ(table_.signals_to(500), std::vector<int>{SIGTERM});
  EXPECT_TRUE(sweep.step(50).empty());  // one empty scan is not enough
  auto out = sweep.step(100);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].confirmed);
  EXPECT_EQ(out[0].scans, 3);
  ASSERT_EQ(out[0].killed.size(), 1u);
  EXPECT_EQ(out[0].killed_total, 1);
  EXPECT_EQ(out[0].killed[0].pid, 500);
  EXPECT_EQ(out[0].killed[0].start_ticks, 1200u);
  EXPECT_EQ(out[0].killed[0].uid, kUid);
  EXPECT_EQ(out[0].killed[0].user, os::user_name(kUid));
  EXPECT_EQ(out[0].killed[0].cmdline, "python -m vllm.engine");
}

TEST_F(CleanupTest, ProcessIgnoringTermGetsKillAfterTheGrace) {
  table_.add(500, 1, 1200, kUid, "7-1-abc");
  table_.find(500)->ignores_term = true;
  auto sweep = make({50, 1000, 10'000});
  sweep.add(target(), 0);
  int64_t now = 0;
  for (; now < 1000; now += 50) {
    EXPECT_TRUE(sweep.step(now).empty());
    EXPECT_TRUE(table_.has(500)) << now;
  }
  EXPECT_EQ(table_.signals_to(500), (std::vector<int>{SIGTERM, SIGCONT}));
  EXPECT_TRUE(sweep.step(now).empty());  // 1000: the grace has passed
  EXPECT_FALSE(table_.has(500));
  EXPECT_EQ(table_.signals_to(500), (std::vector<int>{SIGTERM, SIGCONT, SIGKILL}));
  now += 50;
  auto out = run_until_done(sweep, now, 5000);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].confirmed);
  EXPECT_EQ(now, 1100);
  ASSERT_EQ(out[0].killed.size(), 1u);
  EXPECT_EQ(out[0].killed[0].pid, 500);
}

TEST_F(CleanupTest, UnkillableProcessIsNamedAtTheLimit) {
  table_.add(500, 1, 1200, kUid, "7-1-abc", "llama-server --port 8080");
  table_.find(500)->unkillable = true;
  auto sweep = make({50, 200, 1000});
  sweep.add(target(), 0);
  int64_t now = 0;
  auto out = run_until_done(sweep, now, 5000);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(now, 1000);  // not before the limit
  EXPECT_FALSE(out[0].confirmed);
  ASSERT_EQ(out[0].remaining.size(), 1u);
  EXPECT_EQ(out[0].remaining[0].pid, 500);
  EXPECT_EQ(out[0].remaining[0].cmdline, "llama-server --port 8080");
  EXPECT_EQ(out[0].remaining[0].user, os::user_name(kUid));
  ASSERT_EQ(out[0].killed.size(), 1u);
  // SIGKILL is repeated every grace while it stays.
  auto sigs = table_.signals_to(500);
  EXPECT_GE(std::count(sigs.begin(), sigs.end(), SIGKILL), 4);
  EXPECT_TRUE(sweep.idle());
}

TEST_F(CleanupTest, ProcessThatMayNotBeSignalledIsRemainingNotKilled) {
  table_.add(500, 1, 1200, kUid, "7-1-abc");
  table_.find(500)->deny_signals = true;
  auto sweep = make({50, 200, 500});
  sweep.add(target(), 0);
  int64_t now = 0;
  auto out = run_until_done(sweep, now, 5000);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].confirmed);
  EXPECT_TRUE(out[0].killed.empty());
  ASSERT_EQ(out[0].remaining.size(), 1u);
  EXPECT_EQ(out[0].remaining[0].pid, 500);
}

TEST_F(CleanupTest, ReusedPidIsNeverSignalled) {
  table_.add(500, 1, 1200, kUid, "7-1-abc");
  // Between the scan and the signal, 500 exits and its pid goes to an unrelated process.
  table_.on_signal = [this](pid_t pid) {
    if (pid == 500 && table_.find(500)->facts.start_ticks == 1200) {
      table_.add(500, 1, 1300, kUid, "", "bash");
    }
  };
  auto out = sweep_target();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].confirmed);
  EXPECT_TRUE(table_.sent().empty());
  EXPECT_TRUE(out[0].killed.empty());
  ASSERT_TRUE(table_.has(500));
  EXPECT_EQ(table_.find(500)->facts.start_ticks, 1300u);
}

TEST_F(CleanupTest, ProcessesOlderThanTheRunAreNeverTouchedEvenWithTheMarker) {
  table_.add(500, 1, kRunStart - 1, kUid, "7-1-abc");  // e.g. the marker was copied by hand
  table_.add(501, 1, kRunStart, kUid, "7-1-abc");      // started in the run's own tick
  // Older than run b, though newer than run a: read (it might be a's) but left alone.
  table_.add(502, 1, 1200, kUid, "run-b");
  auto sweep = make();
  sweep.add(target(), 0);
  sweep.add(target(8, "run-b", 1300), 0);
  std::vector<CleanupOutcome> out;
  for (int64_t now = 0; !sweep.idle() && now <= 5000; now += 50) {
    for (auto& o : sweep.step(now)) out.push_back(std::move(o));
  }
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].confirmed);
  EXPECT_TRUE(out[1].confirmed);
  EXPECT_TRUE(table_.has(500));
  EXPECT_TRUE(table_.signals_to(500).empty());
  EXPECT_EQ(table_.env_reads(500), 0);  // its facts ruled it out: one read
  EXPECT_FALSE(table_.has(501));
  EXPECT_TRUE(table_.has(502));
  EXPECT_TRUE(table_.signals_to(502).empty());
}

// With the table's last pid known, a scan reads again only the processes that may be new: one
// read before (and older than every pending run) whose pid was not given out since is the same
// process. The fixture's processes 1 and 100 are old; 2000-2002 are newer than the run.
TEST_F(CleanupTest, AScanReadsOnlyTheProcessesThatMayBeNewSinceTheLastOne) {
  table_.last_pid_value = 2002;
  auto sweep = make();
  sweep.add(target(), 0);
  EXPECT_TRUE(sweep.step(0).empty());
  EXPECT_EQ(table_.facts_reads(1), 1);
  EXPECT_EQ(table_.facts_reads(100), 1);
  const int reads_of_a_new_one = table_.facts_reads(2000);  // facts, and again after its environment
  // A process of the run starts between the scans: its pid is given after the first reading.
  table_.add(2003, 1, 1600, kUid, "7-1-abc");
  table_.last_pid_value = 2003;
  EXPECT_TRUE(sweep.step(50).empty());  // found and signalled: not confirmed
  EXPECT_EQ(table_.facts_reads(1), 1) << "old, and its pid not given out since: not read again";
  EXPECT_EQ(table_.facts_reads(100), 1);
  EXPECT_EQ(table_.facts_reads(2000), 2 * reads_of_a_new_one) << "newer than the run: read by every scan";
  EXPECT_EQ(table_.signals_to(2003), (std::vector<int>{SIGTERM}));
  int64_t now = 100;
  auto out = run_until_done(sweep, now, 5000);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].confirmed);
  EXPECT_EQ(out[0].killed_total, 1);
  EXPECT_EQ(table_.facts_reads(1), 1);
}

// An old process's pid given to a new process of the run between two scans is read again: the
// pid is among those given since the first reading, or the last pid wrapped (it went down), or
// the first scan is too long ago to know.
TEST_F(CleanupTest, APidGivenOutAgainIsReadAgainWhateverTheLastPidDid) {
  struct Case {
    const char* what;
    pid_t last_pid_then;
    int64_t second_scan_ms;
  };
  for (const Case& c : {Case{"given since the first reading", 2005, 50},
                        Case{"the last pid wrapped", 300, 50},
                        Case{"the first scan too long ago", 2002, 50 + CleanupSweep::kKnownStartsMs + 1}}) {
    FakeProcessTable table;
    table.add(1, 0, 5, 0, "");
    // Older than the run; its pid may lie above the last pid given (from before a wrap).
    table.add(2002, 1, 5, kUid, "", "an old daemon");
    table.last_pid_value = c.last_pid_then == 2005 ? 2001 : 2002;
    CleanupSweep sweep(table, {50, 1000, 10'000}, kUid);
    sweep.add(target(), 0);
    EXPECT_TRUE(sweep.step(0).empty()) << c.what;
    // 2002 exits; its pid goes to a process of the run.
    table.add(2002, 1, 1600, kUid, "7-1-abc");
    table.last_pid_value = c.last_pid_then;
    sweep.step(c.second_scan_ms);
    EXPECT_EQ(table.facts_reads(2002), 2) << c.what;
    EXPECT_EQ(table.signals_to(2002), (std::vector<int>{SIGTERM})) << c.what;
  }
}

TEST_F(CleanupTest, OtherUsersZombiesAndKernelThreadsAreSkipped) {
  table_.add(500, 1, 1200, 0, "7-1-abc");     // another user (root)
  table_.add(501, 1, 1200, kUid, "7-1-abc");  // a zombie
  table_.find(501)->facts.zombie = true;
  table_.add(502, 2, 1200, kUid, "7-1-abc");  // a kernel thread
  auto out = sweep_target();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].confirmed);
  EXPECT_TRUE(table_.sent().empty());
  EXPECT_EQ(table_.env_reads(500), 0);
  EXPECT_EQ(table_.env_reads(501), 0);
  EXPECT_EQ(table_.env_reads(502), 0);

  // As root (no uid filter) the other user's process is ours to kill.
  CleanupSweep as_root(table_, {50, 1000, 10'000}, std::nullopt);
  as_root.add(target(), 0);
  int64_t now = 0;
  out = run_until_done(as_root, now, 5000);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].killed.size(), 1u);
  EXPECT_EQ(out[0].killed[0].pid, 500);
  EXPECT_EQ(out[0].killed[0].user, "root");
  EXPECT_TRUE(table_.has(501));
}

TEST_F(CleanupTest, MarkedProcessThatForksDuringAScanIsNotMissed) {
  table_.add(500, 1, 1200, kUid, "7-1-abc", "engine");
  // While the scan reads the parent, it forks a child: a lower pid (pids wrap), not listed.
  bool forked = false;
  table_.on_facts = [&](pid_t pid) {
    if (pid == 500 && !forked) {
      forked = true;
      table_.add(400, 500, 1250, kUid, "7-1-abc", "engine-worker");
    }
  };
  auto sweep = make();
  sweep.add(target(), 0);
  EXPECT_TRUE(sweep.step(0).empty());
  EXPECT_TRUE(forked);
  EXPECT_FALSE(table_.has(500));
  EXPECT_TRUE(table_.has(400));  // missed by the scan that saw it being made
  int64_t now = 50;
  std::vector<CleanupOutcome> out;
  for (; now <= 5000 && out.empty(); now += 50) {
    out = sweep.step(now);
    if (out.empty()) continue;
    EXPECT_FALSE(table_.has(400)) << "confirmed while the child lives";
  }
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].confirmed);
  ASSERT_EQ(out[0].killed.size(), 2u);
  EXPECT_EQ(out[0].killed[0].pid, 500);
  EXPECT_EQ(out[0].killed[1].pid, 400);
  EXPECT_EQ(table_.signals_to(400), std::vector<int>{SIGTERM});
}

TEST_F(CleanupTest, MarkedProcessThatForksAndExitsDuringAScanIsNotMissed) {
  table_.add(500, 1, 1200, kUid, "7-1-abc");
  bool forked = false;
  table_.on_facts = [&](pid_t pid) {
    if (pid == 500 && !forked) {
      forked = true;
      table_.add(400, 500, 1250, kUid, "7-1-abc");
      table_.remove(500);  // gone before the scan could read it
    }
  };
  auto sweep = make();
  sweep.add(target(), 0);
  EXPECT_TRUE(sweep.step(0).empty());   // found nothing, but a process vanished unexamined
  EXPECT_TRUE(sweep.step(50).empty());  // finds the child
  EXPECT_FALSE(table_.has(400));
  EXPECT_TRUE(sweep.step(100).empty());
  auto out = sweep.step(150);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].confirmed);
  ASSERT_EQ(out[0].killed.size(), 1u);
  EXPECT_EQ(out[0].killed[0].pid, 400);
}

TEST_F(CleanupTest, ProcessVanishingDuringAScanDelaysConfirmation) {
  auto sweep = make();
  sweep.add(target(), 0);
  EXPECT_TRUE(sweep.step(0).empty());  // empty scan 1
  // In the next scan, process 2000 (new enough to be the run's) exits while its facts are read.
  table_.on_facts = [this](pid_t pid) {
    if (pid == 2000) table_.remove(2000);
  };
  EXPECT_TRUE(sweep.step(50).empty()) << "a scan with an unexamined process confirmed";
  table_.on_facts = nullptr;
  // The same while its environment is read (its facts were read: it could be the run's).
  table_.add(2003, 1, 1500, kUid, "");
  table_.on_env = [this](pid_t pid) {
    if (pid == 2003) table_.remove(2003);
  };
  EXPECT_TRUE(sweep.step(100).empty()) << "a scan with an unexamined process confirmed";
  table_.on_env = nullptr;
  auto out = sweep.step(150);  // empty scan 2
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].confirmed);
  EXPECT_EQ(out[0].scans, 4);
}

TEST_F(CleanupTest, VanishingProcessDelaysOnlyTheRunsItCouldBelongTo) {
  auto sweep = make();
  sweep.add(target(1, "run-a", 1000), 0);
  sweep.add(target(2, "run-b", 1600), 0);
  EXPECT_TRUE(sweep.step(0).empty());
  // Started at 1500: after run a began, before run b did. It exits while its environment is
  // read, so it might have been a's, never b's.
  table_.add(2003, 1, 1500, kUid, "");
  table_.on_env = [this](pid_t pid) {
    if (pid == 2003) table_.remove(2003);
  };
  auto out = sweep.step(50);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].key, 2);
  EXPECT_TRUE(out[0].confirmed);
  table_.on_env = nullptr;
  out = sweep.step(100);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].key, 1);
  EXPECT_TRUE(out[0].confirmed);
}

TEST_F(CleanupTest, AVanishingProcessStartedInTheRunsOwnTickCouldBeTheRuns) {
  auto sweep = make();
  sweep.add(target(2, "run-b", 1600), 0);
  EXPECT_TRUE(sweep.step(0).empty());
  table_.add(2003, 1, 1600, kUid, "");  // the same tick as the run: it could be the run's
  table_.on_env = [this](pid_t pid) {
    if (pid == 2003) table_.remove(2003);
  };
  EXPECT_TRUE(sweep.step(50).empty()) << "a scan with an unexamined process confirmed";
  table_.on_env = nullptr;
  auto out = sweep.step(100);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].confirmed);
  EXPECT_EQ(out[0].scans, 3);
}

TEST_F(CleanupTest, AProcessThatBecomesAZombieWhileReadIsNotRuledOut) {
  auto sweep = make();
  sweep.add(target(), 0);
  EXPECT_TRUE(sweep.step(0).empty());
  // It exits while its environment is read: a zombie now, it may have forked a marked child
  // this scan could not list.
  table_.add(2003, 1, 1500, kUid, "");
  table_.on_env = [this](pid_t pid) {
    if (pid != 2003) return;
    table_.find(2003)->facts.zombie = true;
    table_.find(2003)->env_unreadable = true;
  };
  EXPECT_TRUE(sweep.step(50).empty()) << "a scan with an unexamined process confirmed";
  table_.on_env = nullptr;
  auto out = sweep.step(100);  // the zombie is skipped now: the second empty scan
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].confirmed);
  EXPECT_EQ(out[0].scans, 3);
}

// Whatever the pattern of calls (a step every millisecond, targets added while others are
// pending and just after the sweep went idle), no cleanup is confirmed sooner than a poll
// after its first scan, and none waits longer than two polls past it when nothing escaped.
TEST_F(CleanupTest, ConfirmationComesAPollAfterTheFirstScanWhateverTheCalls) {
  auto sweep = make({50, 1000, 10'000});
  // 1 and 2 are confirmed at 50 and 100; 3 comes to an idle sweep, 4 while 3 is pending, 5
  // to an idle sweep again.
  std::map<int64_t, int64_t> added_at = {{1, 0}, {2, 20}, {3, 101}, {4, 130}, {5, 202}};
  std::map<int64_t, int64_t> first_scan, confirmed_at;
  for (int64_t now = 0; now <= 400; ++now) {
    for (const auto& [key, at] : added_at) {
      if (at == now) sweep.add(target(key, "run-" + std::to_string(key)), now);
    }
    const int scans_before = table_.scans();
    for (const CleanupOutcome& o : sweep.step(now)) {
      EXPECT_TRUE(o.confirmed) << "key " << o.key;
      confirmed_at[o.key] = now;
    }
    if (table_.scans() == scans_before) continue;
    for (const auto& [key, at] : added_at) {
      if (at <= now && !first_scan.count(key)) first_scan[key] = now;
    }
  }
  ASSERT_EQ(confirmed_at.size(), added_at.size());
  for (const auto& [key, at] : confirmed_at) {
    EXPECT_GE(at - first_scan[key], 50) << "key " << key;
    EXPECT_LE(at - first_scan[key], 100) << "key " << key;
  }
  EXPECT_EQ(first_scan[3], 101);  // an idle sweep scans a new target at once
  EXPECT_EQ(first_scan[4], 151);  // with 3 pending, 4 joins its next scan
  EXPECT_EQ(first_scan[5], 202);
}

// Two runs end a moment apart. The second run's cleanup must not bring a scan that confirms the
// first one early: each cleanup is confirmed only by an empty scan at least a poll after its own
// first empty scan (DESIGN.md §3, "two empty scans a poll apart"), however the scans of the
// other cleanups fall. Two rules keep it: a busy sweep scans at most once a poll (next_scan_ms),
// and an empty scan counts toward a confirmation only a poll after the one before it (step).
TEST_F(CleanupTest, ASecondCleanupNeverConfirmsTheFirstSoonerThanAPollAfterItsFirstEmptyScan) {
  constexpr int64_t kPoll = 50;
  auto sweep = make({kPoll, 1000, 10'000});
  std::vector<int64_t> scans;
  std::map<int64_t, int64_t> confirmed_at;
  for (int64_t now = 0; now <= 4 * kPoll; ++now) {
    if (now == 0) sweep.add(target(1, "run-a"), now);  // scanned at once: its first empty scan
    if (now == 1) sweep.add(target(2, "run-b"), now);  // the second run ends a millisecond later
    const int scans_before = table_.scans();
    for (const CleanupOutcome& o : sweep.step(now)) {
      EXPECT_TRUE(o.confirmed) << "key " << o.key;
      confirmed_at[o.key] = now;
    }
    if (table_.scans() != scans_before) scans.push_back(now);
  }
  ASSERT_EQ(confirmed_at.count(1), 1u);
  ASSERT_EQ(confirmed_at.count(2), 1u);
  // The rule: run a's first empty scan was at 0, run b's at its first scan.
  EXPECT_GE(confirmed_at[1], kPoll)
      << "run a confirmed less than a poll after its first empty scan";
  EXPECT_GE(confirmed_at[2], scans.at(1) + kPoll)
      << "run b confirmed less than a poll after its first empty scan";
  // And exactly when: run b joins a's next scan instead of bringing one of its own.
  EXPECT_EQ(scans, (std::vector<int64_t>{0, kPoll, 2 * kPoll}));
  EXPECT_EQ(confirmed_at[1], kPoll);
  EXPECT_EQ(confirmed_at[2], 2 * kPoll);
}

TEST_F(CleanupTest, OneScanServesManyTargetsEachWithItsOwnProcesses) {
  table_.add(500, 1, 1200, kUid, "run-a", "a-engine");
  table_.add(501, 1, 1200, kUid, "run-b", "b-engine");
  table_.find(501)->ignores_term = true;
  table_.add(502, 1, 1200, kUid, "run-b", "b-server");
  auto sweep = make({50, 100, 10'000});
  sweep.add(target(1, "run-a"), 0);
  sweep.add(target(2, "run-b"), 0);
  EXPECT_TRUE(sweep.step(0).empty());
  EXPECT_EQ(table_.scans(), 1);  // one scan for both
  EXPECT_EQ(table_.signals_to(500), std::vector<int>{SIGTERM});
  EXPECT_EQ(table_.signals_to(502), std::vector<int>{SIGTERM});
  EXPECT_EQ(table_.signals_to(501), (std::vector<int>{SIGTERM, SIGCONT}));
  EXPECT_TRUE(sweep.step(50).empty());
  auto out = sweep.step(100);  // a: two empty scans; b: 501 gets SIGKILL
  EXPECT_EQ(table_.scans(), 3);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].key, 1);
  EXPECT_TRUE(out[0].confirmed);
  ASSERT_EQ(out[0].killed.size(), 1u);
  EXPECT_EQ(out[0].killed[0].cmdline, "a-engine");
  EXPECT_FALSE(table_.has(501));
  EXPECT_TRUE(sweep.step(150).empty());
  out = sweep.step(200);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].key, 2);
  EXPECT_TRUE(out[0].confirmed);
  ASSERT_EQ(out[0].killed.size(), 2u);
  EXPECT_EQ(out[0].killed[0].pid, 501);
  EXPECT_EQ(out[0].killed[1].pid, 502);
  EXPECT_EQ(table_.scans(), 5);
}

TEST_F(CleanupTest, TargetAddedMidCleanupJoinsTheNextScan) {
  table_.add(500, 1, 1200, kUid, "run-a");
  table_.find(500)->ignores_term = true;
  auto sweep = make({50, 1000, 10'000});
  sweep.add(target(1, "run-a"), 0);
  EXPECT_TRUE(sweep.step(0).empty());
  EXPECT_TRUE(sweep.step(50).empty());
  table_.add(600, 1, 2600, kUid, "run-b");
  sweep.add(target(2, "run-b", 2500), 60);
  EXPECT_EQ(sweep.next_scan_ms(), 100);  // batched with a's next scan, not a scan of its own
  EXPECT_TRUE(sweep.step(60).empty());
  EXPECT_EQ(table_.scans(), 2);
  EXPECT_TRUE(sweep.step(100).empty());
  EXPECT_EQ(table_.scans(), 3);
  EXPECT_FALSE(table_.has(600));
  EXPECT_TRUE(sweep.step(150).empty());
  auto out = sweep.step(200);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].key, 2);
  EXPECT_TRUE(out[0].confirmed);
  EXPECT_EQ(out[0].scans, 3);
  EXPECT_EQ(sweep.pending(), 1u);
  EXPECT_TRUE(table_.has(500));  // a is still in its grace
  int64_t now = 250;
  out = run_until_done(sweep, now, 5000);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].key, 1);
  EXPECT_TRUE(out[0].confirmed);
  EXPECT_EQ(now, 1100);
  // An idle sweep scans a new target at once.
  sweep.add(target(3, "run-c"), 5000);
  EXPECT_EQ(sweep.next_scan_ms(), 5000);
}

TEST_F(CleanupTest, ATargetAddedJustAfterTheSweepWentIdleIsScannedAtOnce) {
  auto sweep = make();
  sweep.add(target(1, "run-a"), 0);
  EXPECT_TRUE(sweep.step(0).empty());
  auto out = sweep.step(50);  // a second empty scan a poll later: confirmed, idle
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(sweep.idle());
  // The next run ends a moment later: its first scan need not wait out the poll.
  sweep.add(target(2, "run-b"), 51);
  EXPECT_EQ(sweep.next_scan_ms(), 51);
  EXPECT_TRUE(sweep.step(51).empty());
  EXPECT_EQ(sweep.next_scan_ms(), 101);
  out = sweep.step(101);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].confirmed);
  EXPECT_EQ(out[0].scans, 2);
}

TEST_F(CleanupTest, KilledListIsCappedButCounted) {
  for (pid_t pid = 3000; pid < 3000 + 150; ++pid) table_.add(pid, 1, 1200, kUid, "7-1-abc");
  auto out = sweep_target();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].confirmed);
  EXPECT_EQ(out[0].killed.size(), CleanupSweep::kMaxListed);
  EXPECT_EQ(out[0].killed_total, 150);
}

}  // namespace
}  // namespace gpuq::runner
