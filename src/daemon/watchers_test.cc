// SPDX-License-Identifier: Apache-2.0
// Each watcher on a fake clock: its episode starts once its condition has lasted its limit
// (exactly then, not a millisecond before), repeats while it lasts (exactly every repeat),
// ends when it is gone, a limit of 0 turns it off, and a restart (a new book restored from the
// saved episodes) neither repeats the start nor loses the end.
#include "daemon/watchers.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace gpuq::daemon {
namespace {

constexpr int64_t kMinute = 60'000;
constexpr int64_t kT0 = 1'700'000'000'000;

WatchConfig config() {
  WatchConfig c;
  c.repeat_ms = 30 * kMinute;
  c.quiet_ms = 0;
  c.gpu_idle_ms = 20 * kMinute;
  c.gpu_idle_utilization = 5;
  c.idle_with_work_ms = 10 * kMinute;
  c.empty_ms = 0;
  return c;
}

// A watcher's world: facts that change between looks, a book, and what was persisted.
struct World {
  WatchConfig config = ::gpuq::daemon::config();
  std::vector<JobFacts> jobs;
  QueueFacts queue;
  EpisodeBook book{config.repeat_ms};
  std::map<std::string, OpenEpisode> saved;

  std::vector<WatchEvent> look(int64_t now) {
    std::vector<Sighting> all = watch_queue(queue, config);
    for (const auto& job : jobs) {
      auto some = watch_job(job, config, now);
      all.insert(all.end(), some.begin(), some.end());
    }
    LookResult result = book.look(all, now);
    for (auto& episode : result.saved) saved[episode.key] = episode;
    for (auto& key : result.forgotten) saved.erase(key);
    return result.events;
  }
  // The daemon stops and starts: a new book from what was persisted (through its JSON form).
  void restart() {
    book = EpisodeBook(config.repeat_ms);
    std::vector<OpenEpisode> restored;
    for (const auto& [key, e] : saved) {
      restored.push_back(episode_from(key, e.kind, e.since_ms, e.reported_ms,
                                      nlohmann::json::parse(episode_data(e).dump())));
    }
    book.restore(std::move(restored));
  }
};

std::vector<std::string> phases(const std::vector<WatchEvent>& events, const std::string& kind) {
  std::vector<std::string> out;
  for (const auto& e : events) {
    if (e.kind == kind) out.push_back(e.data.at("phase").get<std::string>());
  }
  return out;
}

using Phases = std::vector<std::string>;

TEST(RequiresWaitWatcher, StartsAfterItsLimitRepeatsEndsAndSurvivesRestart) {
  World w;
  JobFacts job;
  job.id = 7;
  job.requires_warn_ms = 60 * kMinute;
  job.waiting = true;
  job.waiting_since_ms = kT0;
  job.waiting_why = "file /data/ready";
  w.jobs = {job};
  EXPECT_EQ(phases(w.look(kT0 + 59 * kMinute), "job.requires_wait"), Phases{});
  auto started = w.look(kT0 + 61 * kMinute);
  ASSERT_EQ(phases(started, "job.requires_wait"), Phases{"start"});
  EXPECT_EQ(started[0].job, 7);
  EXPECT_EQ(started[0].data["for_ms"], 61 * kMinute);
  EXPECT_NE(started[0].data["why"].get<std::string>().find("/data/ready"), std::string::npos);
  EXPECT_EQ(phases(w.look(kT0 + 70 * kMinute), "job.requires_wait"), Phases{});
  EXPECT_EQ(phases(w.look(kT0 + 91 * kMinute), "job.requires_wait"), Phases{"repeat"});

  w.restart();
  // A check is running again after the restart: the open episode neither ends nor restarts.
  w.jobs[0].waiting = false;
  w.jobs[0].waiting_unknown = true;
  EXPECT_EQ(phases(w.look(kT0 + 92 * kMinute), "job.requires_wait"), Phases{});
  w.jobs[0].waiting = true;
  w.jobs[0].waiting_unknown = false;
  EXPECT_EQ(phases(w.look(kT0 + 93 * kMinute), "job.requires_wait"), Phases{});
  EXPECT_EQ(phases(w.look(kT0 + 122 * kMinute), "job.requires_wait"), Phases{"repeat"});

  w.jobs[0].waiting = false;  // the file appeared
  auto ended = w.look(kT0 + 123 * kMinute);
  ASSERT_EQ(phases(ended, "job.requires_wait"), Phases{"end"});
  EXPECT_EQ(ended[0].data["for_ms"], 123 * kMinute);
  EXPECT_TRUE(w.saved.empty());
}

TEST(RequiresWaitWatcher, AnEpisodeThatEndedWhileTheDaemonWasDownEndsAtTheFirstLook) {
  World w;
  JobFacts job;
  job.id = 3;
  job.requires_warn_ms = kMinute;
  job.waiting = true;
  job.waiting_since_ms = kT0;
  w.jobs = {job};
  ASSERT_EQ(phases(w.look(kT0 + 2 * kMinute), "job.requires_wait"), Phases{"start"});
  w.restart();
  w.jobs.clear();  // it started and finished while the daemon was down
  EXPECT_EQ(phases(w.look(kT0 + 9 * kMinute), "job.requires_wait"), Phases{"end"});
}

TEST(RequiresWaitWatcher, OffWhenTheLimitIsZero) {
  World w;
  JobFacts job;
  job.id = 3;
  job.requires_warn_ms = 0;
  job.waiting = true;
  job.waiting_since_ms = kT0;
  w.jobs = {job};
  EXPECT_TRUE(w.look(kT0 + 100 * kMinute).empty());
}

JobFacts running(int64_t id) {
  JobFacts job;
  job.id = id;
  job.running = true;
  job.started_ms = kT0;
  return job;
}

TEST(QuietWatcher, StartsWhenTheLogStopsGrowingAndEndsWhenItGrows) {
  World w;
  JobFacts job = running(4);
  job.quiet_ms = 5 * kMinute;
  job.log_changed_ms = kT0 + kMinute;
  w.jobs = {job};
  EXPECT_TRUE(w.look(kT0 + 5 * kMinute).empty());
  ASSERT_EQ(phases(w.look(kT0 + 6 * kMinute), "job.quiet"), Phases{"start"});
  EXPECT_EQ(phases(w.look(kT0 + 36 * kMinute), "job.quiet"), Phases{"repeat"});
  w.restart();
  EXPECT_EQ(phases(w.look(kT0 + 40 * kMinute), "job.quiet"), Phases{});
  w.jobs[0].log_changed_ms = kT0 + 41 * kMinute;
  EXPECT_EQ(phases(w.look(kT0 + 42 * kMinute), "job.quiet"), Phases{"end"});
}

TEST(QuietWatcher, ARunThatHasWrittenNothingIsQuietSinceItsStart) {
  World w;
  JobFacts job = running(4);
  job.quiet_ms = 5 * kMinute;
  w.jobs = {job};
  EXPECT_EQ(phases(w.look(kT0 + 5 * kMinute), "job.quiet"), Phases{"start"});
}

TEST(OverdueWatcher, EstimateTimesFactorOrWarnAfter) {
  World w;
  JobFacts job = running(5);
  job.estimate_ms = 10 * kMinute;
  w.config.overdue_factor = 2.0;
  w.jobs = {job};
  EXPECT_TRUE(w.look(kT0 + 19 * kMinute).empty());
  auto started = w.look(kT0 + 21 * kMinute);
  ASSERT_EQ(phases(started, "job.overdue"), Phases{"start"});
  EXPECT_EQ(started[0].data["limit_ms"], 20 * kMinute);
  EXPECT_EQ(started[0].data["estimate_ms"], 10 * kMinute);
  w.restart();
  EXPECT_EQ(phases(w.look(kT0 + 22 * kMinute), "job.overdue"), Phases{});
  EXPECT_EQ(phases(w.look(kT0 + 51 * kMinute), "job.overdue"), Phases{"repeat"});
  w.jobs.clear();  // the run ended
  EXPECT_EQ(phases(w.look(kT0 + 52 * kMinute), "job.overdue"), Phases{"end"});

  World explicit_limit;
  JobFacts limited = running(6);
  limited.warn_after_ms = 3 * kMinute;
  limited.estimate_ms = 60 * kMinute;  // --warn-after wins over the estimate
  explicit_limit.jobs = {limited};
  EXPECT_EQ(phases(explicit_limit.look(kT0 + 4 * kMinute), "job.overdue"), Phases{"start"});
}

TEST(OverdueWatcher, NothingWithoutAnEstimateOrALimit) {
  World w;
  w.jobs = {running(5)};
  EXPECT_TRUE(w.look(kT0 + 1000 * kMinute).empty());
}

TEST(GpuIdleWatcher, IdleGpusAndAQuietLogForItsLimit) {
  World w;
  JobFacts job = running(8);
  job.gpus = 1;
  job.gpu_utilization = 0;
  job.log_changed_ms = kT0 + 10 * kMinute;
  job.gpu_busy_ms = kT0 + 5 * kMinute;
  w.jobs = {job};
  EXPECT_TRUE(w.look(kT0 + 29 * kMinute).empty());
  ASSERT_EQ(phases(w.look(kT0 + 31 * kMinute), "job.gpu_idle"), Phases{"start"});
  // No sample after a restart: the episode stays open without a second start.
  w.restart();
  w.jobs[0].gpu_utilization = -1;
  EXPECT_TRUE(w.look(kT0 + 32 * kMinute).empty());
  w.jobs[0].gpu_utilization = 2;
  EXPECT_TRUE(w.look(kT0 + 33 * kMinute).empty());
  EXPECT_EQ(phases(w.look(kT0 + 62 * kMinute), "job.gpu_idle"), Phases{"repeat"});
  w.jobs[0].gpu_utilization = 90;  // it got going
  EXPECT_EQ(phases(w.look(kT0 + 63 * kMinute), "job.gpu_idle"), Phases{"end"});
}

TEST(GpuIdleWatcher, AJobWithoutGpusOrABusyGpuIsNeverIdle) {
  World w;
  JobFacts cpu = running(9);
  cpu.gpu_utilization = 0;
  JobFacts busy = running(10);
  busy.gpus = 1;
  busy.gpu_utilization = 60;
  w.jobs = {cpu, busy};
  EXPECT_TRUE(w.look(kT0 + 100 * kMinute).empty());
}

TEST(IdleWithWorkWatcher, NamesTheHeadJobsAndCountsFromTheFirstLook) {
  World w;
  w.queue.free_gpus = 1;
  w.queue.waiting_jobs = 2;
  w.queue.heads = {{11, "lane net is held by job 3"}, {12, "waiting for job 11"}};
  EXPECT_TRUE(w.look(kT0).empty());
  EXPECT_TRUE(w.look(kT0 + 9 * kMinute).empty());
  auto started = w.look(kT0 + 10 * kMinute);
  ASSERT_EQ(phases(started, "queue.idle_with_work"), Phases{"start"});
  EXPECT_EQ(started[0].data["heads"][0]["job"], 11);
  EXPECT_EQ(started[0].data["heads"][0]["reason"], "lane net is held by job 3");
  EXPECT_FALSE(started[0].job.has_value());
  EXPECT_EQ(w.book.next_due_ms(), kT0 + 40 * kMinute);
  w.restart();
  EXPECT_TRUE(w.look(kT0 + 11 * kMinute).empty());
  EXPECT_EQ(phases(w.look(kT0 + 40 * kMinute), "queue.idle_with_work"), Phases{"repeat"});
  w.queue.free_gpus = 0;
  EXPECT_EQ(phases(w.look(kT0 + 41 * kMinute), "queue.idle_with_work"), Phases{"end"});
}

TEST(IdleWithWorkWatcher, AnInterruptionStartsTheCountAfresh) {
  World w;
  w.queue.free_gpus = 1;
  w.queue.waiting_jobs = 1;
  w.look(kT0);
  w.queue.waiting_jobs = 0;
  w.look(kT0 + 5 * kMinute);
  w.queue.waiting_jobs = 1;
  EXPECT_TRUE(w.look(kT0 + 6 * kMinute).empty());
  EXPECT_EQ(w.book.next_due_ms(), kT0 + 16 * kMinute);
  EXPECT_TRUE(w.look(kT0 + 15 * kMinute).empty());
  EXPECT_EQ(phases(w.look(kT0 + 16 * kMinute), "queue.idle_with_work"), Phases{"start"});
}

TEST(IdleWithWorkWatcher, NotWhileDraining) {
  World w;
  w.queue.free_gpus = 2;
  w.queue.waiting_jobs = 1;
  w.queue.draining = true;
  w.look(kT0);
  EXPECT_TRUE(w.look(kT0 + 100 * kMinute).empty());
}

TEST(EmptyQueueWatcher, OptIn) {
  World w;
  w.queue.empty = true;
  w.look(kT0);
  EXPECT_TRUE(w.look(kT0 + 100 * kMinute).empty());  // off by default
  w.config.empty_ms = 15 * kMinute;
  w.book = EpisodeBook(w.config.repeat_ms);
  w.look(kT0);
  ASSERT_EQ(phases(w.look(kT0 + 15 * kMinute), "queue.empty"), Phases{"start"});
  w.queue.empty = false;
  EXPECT_EQ(phases(w.look(kT0 + 16 * kMinute), "queue.empty"), Phases{"end"});
}

// Every watcher, its condition holding from kT0: nothing a millisecond before its limit, the
// start exactly at it, nothing a millisecond before the repeat is due, the repeat exactly then.
struct LimitCase {
  std::string kind;
  int64_t limit_ms;
  std::function<void(World&)> arrange;
  bool counts_from_first_look = false;  // the condition has no since of its own
};

TEST(Watchers, EachStartsExactlyAtItsLimitAndRepeatsExactlyOnTime) {
  std::vector<LimitCase> cases = {
      {"job.requires_wait", 60 * kMinute,
       [](World& w) {
         JobFacts job;
         job.id = 1;
         job.requires_warn_ms = 60 * kMinute;
         job.waiting = true;
         job.waiting_since_ms = kT0;
         w.jobs = {job};
       }},
      {"job.quiet", 5 * kMinute,
       [](World& w) {
         JobFacts job = running(2);
         job.started_ms = kT0 - 30 * kMinute;
         job.log_changed_ms = kT0;
         job.quiet_ms = 5 * kMinute;
         w.jobs = {job};
       }},
      {"job.overdue", 7 * kMinute,
       [](World& w) {
         JobFacts job = running(3);
         job.warn_after_ms = 7 * kMinute;
         w.jobs = {job};
       }},
      {"job.overdue", 15 * kMinute,  // the estimate times the configured factor
       [](World& w) {
         w.config.overdue_factor = 1.5;
         JobFacts job = running(3);
         job.estimate_ms = 10 * kMinute;
         w.jobs = {job};
       }},
      {"job.gpu_idle", 20 * kMinute,
       [](World& w) {
         JobFacts job = running(4);
         job.started_ms = kT0 - 60 * kMinute;
         job.gpus = 1;
         job.gpu_utilization = 5;  // at the threshold: idle
         job.log_changed_ms = kT0 - 30 * kMinute;
         job.gpu_busy_ms = kT0;  // busy later than the log grew: idle since then
         w.jobs = {job};
       }},
      {"queue.idle_with_work", 10 * kMinute,
       [](World& w) {
         w.queue.free_gpus = 1;
         w.queue.waiting_jobs = 1;
       },
       true},
      {"queue.empty", 15 * kMinute,
       [](World& w) {
         w.config.empty_ms = 15 * kMinute;
         w.queue.empty = true;
       },
       true},
  };
  const int64_t repeat = config().repeat_ms;
  for (const LimitCase& c : cases) {
    SCOPED_TRACE(c.kind + " after " + std::to_string(c.limit_ms) + " ms");
    World w;
    c.arrange(w);
    if (c.counts_from_first_look) {
      EXPECT_EQ(phases(w.look(kT0), c.kind), Phases{});
    }
    EXPECT_EQ(phases(w.look(kT0 + c.limit_ms - 1), c.kind), Phases{});
    auto started = w.look(kT0 + c.limit_ms);
    ASSERT_EQ(phases(started, c.kind), Phases{"start"});
    EXPECT_EQ(started[0].data["for_ms"], c.limit_ms);
    EXPECT_EQ(phases(w.look(kT0 + c.limit_ms + repeat - 1), c.kind), Phases{});
    EXPECT_EQ(phases(w.look(kT0 + c.limit_ms + repeat), c.kind), Phases{"repeat"});
  }
}

TEST(Watchers, ALimitOfZeroTurnsEachOff) {
  World w;
  w.config.gpu_idle_ms = 0;
  w.config.idle_with_work_ms = 0;
  w.config.empty_ms = 0;
  JobFacts waiting;
  waiting.id = 1;
  waiting.waiting = true;
  waiting.waiting_since_ms = kT0;
  waiting.requires_warn_ms = 0;
  JobFacts idle = running(2);
  idle.quiet_ms = 0;
  idle.gpus = 1;
  idle.gpu_utilization = 0;
  w.jobs = {waiting, idle};
  w.queue.free_gpus = 1;
  w.queue.waiting_jobs = 1;
  w.queue.empty = true;  // not consistent with the rest, but each watcher looks alone
  w.look(kT0);
  EXPECT_TRUE(w.look(kT0 + 1000 * kMinute).empty());
}

TEST(GpuIdleWatcher, AboveTheThresholdIsBusy) {
  World w;
  JobFacts job = running(8);
  job.gpus = 1;
  job.gpu_utilization = 6;  // the threshold is 5
  w.jobs = {job};
  EXPECT_TRUE(w.look(kT0 + 100 * kMinute).empty());
}

// A condition without a since of its own counts from the first look that saw it; a look
// that cannot tell (a check is running) keeps that count.
TEST(RequiresWaitWatcher, ALookThatCannotTellKeepsTheCount) {
  World w;
  JobFacts job;
  job.id = 7;
  job.requires_warn_ms = 60 * kMinute;
  job.waiting = true;  // since 0: counted from this look
  w.jobs = {job};
  EXPECT_TRUE(w.look(kT0).empty());
  w.jobs[0].waiting = false;
  w.jobs[0].waiting_unknown = true;
  EXPECT_TRUE(w.look(kT0 + 30 * kMinute).empty());
  w.jobs[0].waiting = true;
  w.jobs[0].waiting_unknown = false;
  auto started = w.look(kT0 + 60 * kMinute);
  ASSERT_EQ(phases(started, "job.requires_wait"), Phases{"start"});
  EXPECT_EQ(started[0].data["for_ms"], 60 * kMinute);
}

TEST(AttentionReminder, OnlyRepeatsItsStartAndEndAreToldElsewhere) {
  World w;
  w.queue.attention = {{"gpu1", kT0}};
  EXPECT_TRUE(w.look(kT0 + kMinute).empty());
  w.restart();
  EXPECT_TRUE(w.look(kT0 + 2 * kMinute).empty());
  auto reminded = w.look(kT0 + 31 * kMinute);
  ASSERT_EQ(phases(reminded, "resource.attention"), Phases{"repeat"});
  EXPECT_EQ(reminded[0].data["gpu"], "gpu1");
  EXPECT_EQ(reminded[0].data["reminder"], true);
  w.queue.attention.clear();
  EXPECT_TRUE(w.look(kT0 + 32 * kMinute).empty());
  EXPECT_TRUE(w.saved.empty());
}

}  // namespace
}  // namespace gpuq::daemon
