// SPDX-License-Identifier: Apache-2.0
// The fleet client's operations against an in-memory bucket: what each writes, in which order
// of conditions, and what it does with what others (nodes, earlier submits) left there.
#include "fleet/client.h"

#include <gtest/gtest.h>

#include "fleet/testing/memory_store.h"

namespace gpuq::fleet {
namespace {

using testing::Bucket;
using testing::MemoryStore;

constexpr int64_t kNow = 1'795'949'736'123;

class FleetClient : public ::testing::Test {
 protected:
  FleetClient() : bucket_(std::make_shared<Bucket>()), store_(bucket_) {}

  FleetJob job(std::string name, std::string text = "echo hi\n", std::string klass = "any") {
    FleetJob j;
    j.id = new_job_id(kNow + static_cast<int64_t>(count_++));
    j.name = std::move(name);
    j.klass = std::move(klass);
    j.submitted_ms = kNow;
    j.spec.name = j.name;
    j.spec.script_name = "train.sh";
    j.spec.script_text = "#!/bin/bash\n" + text;
    return j;
  }
  bool has(const std::string& key) {
    std::lock_guard lock(bucket_->mutex);
    return bucket_->objects.count(key) > 0;
  }
  std::string body(const std::string& key) {
    std::lock_guard lock(bucket_->mutex);
    return bucket_->objects.at(key).body;
  }
  void put(const std::string& key, const std::string& value) { ASSERT_TRUE(store_.put(key, value)); }
  void put_claim(const std::string& id, std::string node, std::string state, int attempt = 1) {
    Claim c;
    c.job = id;
    c.node = std::move(node);
    c.attempt = attempt;
    c.token = "t";
    c.state = std::move(state);
    if (c.state == kSucceeded) c.exit_code = 0;
    c.runs = 1;
    put(keys::claim(id), to_json(c).dump());
  }
  void heartbeat(const std::string& node, int64_t interval_ms = 10'000, int gpus = 2) {
    Heartbeat beat;
    beat.node = node;
    beat.interval_ms = interval_ms;
    beat.classes = {"any"};
    for (int i = 0; i < gpus; ++i) beat.gpus.push_back({"gpu" + std::to_string(i), "H100", 80'000, false});
    beat.free_gpus = gpus;
    put(keys::heartbeat(node), to_json(beat).dump());
  }
  void advance(int64_t ms) {
    std::lock_guard lock(bucket_->mutex);
    bucket_->now_ms += ms;
  }
  Claim claim_of(const std::string& id) {
    auto read = read_claim(store_, id);
    EXPECT_TRUE(read && *read);
    return (*read)->claim;
  }

  std::shared_ptr<Bucket> bucket_;
  MemoryStore store_;
  int count_ = 0;
};

TEST_F(FleetClient, SubmitWritesNameSpecEntryAndSignal) {
  FleetJob j = job("train");
  auto result = submit(store_, j);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_FALSE(result->existing);
  EXPECT_EQ(body(keys::name("train")), R"({"id":")" + j.id + R"("})");
  EXPECT_TRUE(has(keys::spec(j.id)));
  EXPECT_EQ(body(j.entry()), R"({"id":")" + j.id + R"("})");
  EXPECT_TRUE(j.entry().starts_with("queues/class/any/0050-"));
  EXPECT_TRUE(has("signal"));
  auto stored = read_job(store_, j.id);
  ASSERT_TRUE(stored);
  EXPECT_TRUE(same_fleet_work(*stored, j));
}

TEST_F(FleetClient, ResubmitOfTheSameWorkIsTheExistingJob) {
  FleetJob first = job("train");
  ASSERT_TRUE(submit(store_, first));
  std::string signal = body("signal");
  store_.reset_counts();
  auto again = submit(store_, job("train"));  // a new id, the same work
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->existing);
  EXPECT_FALSE(again->repaired);
  EXPECT_EQ(again->job.id, first.id);
  EXPECT_EQ(body("signal"), signal);
  EXPECT_EQ(store_.counts().put, 1);  // only the refused create of the name
}

TEST_F(FleetClient, SameNameOtherWorkIsAConflict) {
  FleetJob first = job("train");
  ASSERT_TRUE(submit(store_, first));
  auto other = submit(store_, job("train", "echo other\n"));
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code, Code::kConflict);
  EXPECT_NE(other.error().message.find(first.id), std::string::npos) << other.error().message;
  EXPECT_NE(other.error().message.find("--name"), std::string::npos);
  auto elsewhere = submit(store_, job("train", "echo hi\n", "big"));
  ASSERT_FALSE(elsewhere);
  EXPECT_EQ(elsewhere.error().code, Code::kConflict);
}

TEST_F(FleetClient, ASubmitThatStoppedAfterTheNameIsFinishedUnderItsId) {
  FleetJob half = job("train");
  put(keys::name("train"), R"({"id":")" + half.id + R"("})");
  auto result = submit(store_, job("train"));
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_TRUE(result->repaired);
  EXPECT_FALSE(result->existing);
  EXPECT_EQ(result->job.id, half.id);
  EXPECT_TRUE(has(keys::spec(half.id)));
  EXPECT_TRUE(has(result->job.entry()));
}

TEST_F(FleetClient, ASubmitThatStoppedAfterTheSpecGetsItsEntry) {
  FleetJob first = job("train");
  put(keys::name("train"), R"({"id":")" + first.id + R"("})");
  put(keys::spec(first.id), to_json(first).dump());
  auto result = submit(store_, job("train"));
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_TRUE(result->existing);
  EXPECT_TRUE(result->repaired);
  EXPECT_TRUE(has(first.entry()));
  EXPECT_TRUE(has("signal"));
}

TEST_F(FleetClient, AnEndedJobIsNotQueuedAgainByAResubmit) {
  FleetJob first = job("train");
  ASSERT_TRUE(submit(store_, first));
  ASSERT_TRUE(store_.remove(first.entry()));
  put_claim(first.id, "n1", std::string(kSucceeded));
  auto again = submit(store_, job("train"));
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->existing);
  EXPECT_FALSE(again->repaired);
  EXPECT_FALSE(has(first.entry()));
}

TEST_F(FleetClient, RefusedNamesAndUnknownDependencies) {
  auto bad = submit(store_, job("no/slash"));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, Code::kInvalidArgument);
  EXPECT_NE(bad.error().message.find("name 'no/slash' is not valid"), std::string::npos);
  FleetJob j = job("b");
  j.after = {{Dependency::Kind::kAfterOk, "a"}};
  auto unknown = submit(store_, j);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, Code::kNotFound);
  EXPECT_NE(unknown.error().message.find("after 'a'"), std::string::npos);
  std::lock_guard lock(bucket_->mutex);
  EXPECT_TRUE(bucket_->objects.empty());
}

TEST_F(FleetClient, ShowFindsByNameOrIdWithClaimAndCancel) {
  FleetJob j = job("train");
  ASSERT_TRUE(submit(store_, j));
  auto view = show(store_, "train");
  ASSERT_TRUE(view) << view.error().message;
  EXPECT_EQ(view->state, kQueued);
  EXPECT_FALSE(view->claim);
  put_claim(j.id, "n1", std::string(kRunning));
  put(keys::cancel(j.id), "{}");
  view = show(store_, j.id);
  ASSERT_TRUE(view);
  EXPECT_EQ(view->state, kRunning);
  EXPECT_EQ(view->claim->node, "n1");
  EXPECT_TRUE(view->cancel_requested);
  auto missing = show(store_, "nope");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Code::kNotFound);
}

TEST_F(FleetClient, CancelOfAnUnclaimedJobEndsIt) {
  FleetJob j = job("train");
  ASSERT_TRUE(submit(store_, j));
  std::string signal = body("signal");
  auto outcome = cancel(store_, j.id, kNow + 5);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(*outcome, CancelOutcome::kCancelled);
  Claim c = claim_of(j.id);
  EXPECT_EQ(c.state, kCancelled);
  EXPECT_EQ(c.node, "");
  EXPECT_EQ(c.attempt, 0);
  EXPECT_FALSE(c.token.empty());
  EXPECT_TRUE(has(keys::cancel(j.id)));
  EXPECT_FALSE(has(j.entry()));
  EXPECT_TRUE(has(ended_key(kNow + 5, j.id)));
  EXPECT_NE(body("signal"), signal);
}

TEST_F(FleetClient, CancelOfAClaimedJobAsksItsHolder) {
  FleetJob j = job("train");
  ASSERT_TRUE(submit(store_, j));
  put_claim(j.id, "n1", std::string(kRunning));
  auto outcome = cancel(store_, j.id, kNow);
  ASSERT_TRUE(outcome);
  EXPECT_EQ(*outcome, CancelOutcome::kRequested);
  EXPECT_EQ(claim_of(j.id).node, "n1");
  EXPECT_EQ(claim_of(j.id).state, kRunning);
  EXPECT_TRUE(has(keys::cancel(j.id)));
  EXPECT_TRUE(has(j.entry()));  // the holder removes it at the end
}

TEST_F(FleetClient, CancelOfAnEndedJobSaysHowItEnded) {
  FleetJob j = job("train");
  ASSERT_TRUE(submit(store_, j));
  put_claim(j.id, "n1", std::string(kFailed));
  auto outcome = cancel(store_, j.id, kNow);
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().code, Code::kFailedPrecondition);
  EXPECT_NE(outcome.error().message.find("already ended: failed"), std::string::npos);
  EXPECT_FALSE(has(keys::cancel(j.id)));
  auto unknown = cancel(store_, "mbz7w4q0k3xa1", kNow);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, Code::kNotFound);
}

TEST_F(FleetClient, DrainAndUndrain) {
  heartbeat("n1");
  ASSERT_TRUE(drain(store_, "n1", true));
  EXPECT_TRUE(has(keys::drain("n1")));
  std::string signal = body("signal");
  auto nodes = read_nodes(store_);
  ASSERT_TRUE(nodes);
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_TRUE((*nodes)[0].draining);
  ASSERT_TRUE(drain(store_, "n1", false));
  EXPECT_FALSE(has(keys::drain("n1")));
  EXPECT_NE(body("signal"), signal);
  auto typo = drain(store_, "n2", true);
  ASSERT_FALSE(typo);
  EXPECT_EQ(typo.error().code, Code::kNotFound);
  EXPECT_NE(typo.error().message.find("the nodes are: n1"), std::string::npos) << typo.error().message;
  EXPECT_FALSE(has(keys::drain("n2")));
}

TEST_F(FleetClient, StatusJudgesHeartbeatsByTheStoresClock) {
  heartbeat("fresh", 10'000);
  heartbeat("old", 10'000);
  advance(20'000);
  heartbeat("fresh", 10'000);
  advance(15'000);  // old: 35 s > 3 × 10 s; fresh: 15 s
  auto result = status(store_);
  ASSERT_TRUE(result) << result.error().message;
  ASSERT_EQ(result->nodes.size(), 2u);
  EXPECT_EQ(result->nodes[0].name, "fresh");
  EXPECT_FALSE(result->nodes[0].stale);
  EXPECT_EQ(result->nodes[0].heartbeat_age_ms, 15'000);
  EXPECT_EQ(result->nodes[0].gpus, 2);
  EXPECT_EQ(result->nodes[1].name, "old");
  EXPECT_TRUE(result->nodes[1].stale);
  EXPECT_EQ(result->nodes[1].heartbeat_age_ms, 35'000);
}

TEST_F(FleetClient, StatusListsQueuesThenRecentEnds) {
  FleetJob waiting = job("a");
  FleetJob running = job("b");
  running.klass = "";
  running.node = "n1";
  FleetJob done = job("c");
  for (const auto& j : {waiting, running, done}) ASSERT_TRUE(submit(store_, j));
  put_claim(running.id, "n1", std::string(kRunning));
  put_claim(done.id, "n2", std::string(kSucceeded));
  ASSERT_TRUE(store_.remove(done.entry()));
  put(ended_key(kNow + 9, done.id), "{}");
  auto result = status(store_);
  ASSERT_TRUE(result) << result.error().message;
  ASSERT_EQ(result->jobs.size(), 3u);
  EXPECT_EQ(result->jobs[0].id, waiting.id);
  EXPECT_EQ(result->jobs[0].state, kQueued);
  EXPECT_EQ(result->jobs[0].klass, "any");
  EXPECT_EQ(result->jobs[1].id, running.id);
  EXPECT_EQ(result->jobs[1].state, kRunning);
  EXPECT_EQ(result->jobs[1].node, "n1");
  EXPECT_EQ(result->jobs[2].id, done.id);
  EXPECT_EQ(result->jobs[2].state, kSucceeded);
  EXPECT_EQ(result->jobs[2].node, "n2");
  EXPECT_EQ(result->jobs[2].exit_code, 0);
  EXPECT_EQ(result->jobs[2].ended_ms, kNow + 9);
}

// Item "fleet status at size": what status reads does not grow by a request per queued job.
TEST_F(FleetClient, StatusOfTenThousandQueuedJobsMakesABoundedNumberOfRequests) {
  constexpr int kQueuedJobs = 10'000;
  std::vector<FleetJob> jobs;
  for (int i = 0; i < kQueuedJobs; ++i) {
    FleetJob j = job("");
    j.submitted_ms = kNow + i;
    put(keys::spec(j.id), to_json(j).dump());
    put(j.entry(), nlohmann::json{{"id", j.id}}.dump());
    jobs.push_back(std::move(j));
  }
  // The worst job of the queue runs (a node took what fit): it is shown all the same.
  FleetJob& deep = jobs.back();
  put_claim(deep.id, "n1", std::string(kRunning));
  heartbeat("n1");
  {
    Heartbeat beat;
    beat.node = "n1";
    beat.interval_ms = 10'000;
    beat.running = {deep.id};
    put(keys::heartbeat("n1"), to_json(beat).dump());
  }
  for (int i = 0; i < 25; ++i) {
    FleetJob done = job("");
    put(keys::spec(done.id), to_json(done).dump());
    put_claim(done.id, "n1", std::string(kSucceeded));
    put(ended_key(kNow + i, done.id), "{}");
  }
  store_.reset_counts();
  auto result = status(store_);
  ASSERT_TRUE(result) << result.error().message;
  const auto& counts = store_.counts();
  // 1 heartbeat; spec and claim of 20 best + 1 running (its cancel marker too); 20 ends × 2.
  EXPECT_LE(counts.get, 1 + (kQueuedRows + 1) * 2 + 1 + kRecentEnds * 2) << counts.get;
  // nodes/, queues/ (10 pages of 1,000), ended/.
  EXPECT_LE(counts.list, 1 + kQueuedJobs / 1000 + 1 + 1) << counts.list;
  EXPECT_EQ(counts.put + counts.remove, 0);
  ASSERT_EQ(result->queues.size(), 1u);
  EXPECT_EQ(result->queues[0].queue, "queues/class/any/");
  EXPECT_EQ(result->queues[0].entries, static_cast<size_t>(kQueuedJobs));
  EXPECT_EQ(result->queues[0].shown, kQueuedRows + 1);
  EXPECT_EQ(result->not_shown, kQueuedJobs - kQueuedRows - 1);
  ASSERT_EQ(result->jobs.size(), kQueuedRows + 1 + kRecentEnds);
  EXPECT_EQ(result->jobs[0].id, jobs[0].id);  // best first
  EXPECT_EQ(result->jobs[0].state, fleet::kQueued);
  EXPECT_EQ(result->jobs[kQueuedRows].id, deep.id);
  EXPECT_EQ(result->jobs[kQueuedRows].state, kRunning);

  // Every entry, when asked: the old cost, two GETs per job.
  store_.reset_counts();
  auto all = status(store_, StatusOptions{0});
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_EQ(all->not_shown, 0u);
  EXPECT_EQ(all->jobs.size(), kQueuedJobs + kRecentEnds);
  EXPECT_GE(store_.counts().get, 2 * kQueuedJobs);
}

TEST_F(FleetClient, StatusCountsWhatItLeavesOutPerQueue) {
  FleetJob pinned = job("p");
  pinned.klass = "";
  pinned.node = "n1";
  FleetJob low = job("low");
  low.spec.priority = 900;
  FleetJob high = job("high");
  high.spec.priority = 10;
  for (const auto& j : {pinned, low, high}) ASSERT_TRUE(submit(store_, j));
  auto result = status(store_, StatusOptions{2});
  ASSERT_TRUE(result) << result.error().message;
  ASSERT_EQ(result->jobs.size(), 2u);  // the best two across both queues, in queue order
  EXPECT_EQ(result->jobs[0].id, high.id);
  EXPECT_EQ(result->jobs[1].id, pinned.id);
  EXPECT_EQ(result->not_shown, 1u);
  ASSERT_EQ(result->queues.size(), 2u);
  EXPECT_EQ(result->queues[0].queue, "queues/class/any/");
  EXPECT_EQ(result->queues[0].entries, 2u);
  EXPECT_EQ(result->queues[0].shown, 1u);
  EXPECT_EQ(result->queues[1].queue, "queues/node/n1/");
  EXPECT_EQ(result->queues[1].shown, 1u);
}

TEST_F(FleetClient, MoveRepinsWaitingJobsAndCleansEndedOnes) {
  heartbeat("n1");
  heartbeat("n2");
  FleetJob waiting = job("a");
  waiting.klass = "";
  waiting.node = "n1";
  FleetJob done = job("b");
  done.klass = "";
  done.node = "n1";
  FleetJob busy = job("c");
  busy.klass = "";
  busy.node = "n1";
  for (const auto& j : {waiting, done, busy}) ASSERT_TRUE(submit(store_, j));
  put_claim(done.id, "n1", std::string(kSucceeded));
  put_claim(busy.id, "n1", std::string(kRunning));
  auto moved = move_pinned(store_, "n1", "n2", kNow);
  ASSERT_TRUE(moved) << moved.error().message;
  ASSERT_EQ(moved->size(), 3u);
  EXPECT_EQ((*moved)[0].action, MovedEntry::Action::kMoved);
  EXPECT_EQ((*moved)[1].action, MovedEntry::Action::kCleaned);
  EXPECT_EQ((*moved)[2].action, MovedEntry::Action::kSkipped);  // n1 is alive
  EXPECT_NE((*moved)[2].detail.find("fresh"), std::string::npos);
  auto spec = read_job(store_, waiting.id);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->node, "n2");
  EXPECT_FALSE(has(waiting.entry()));
  EXPECT_TRUE(has(spec->entry()));
  EXPECT_TRUE(spec->entry().starts_with("queues/node/n2/"));
  EXPECT_FALSE(has(done.entry()));
  EXPECT_TRUE(has(busy.entry()));
  // The resubmit of the moved job is the moved job, not a conflict.
  FleetJob again = waiting;
  again.id = new_job_id(kNow);
  auto resubmit = submit(store_, again);
  ASSERT_TRUE(resubmit) << resubmit.error().message;
  EXPECT_TRUE(resubmit->existing);
}

TEST_F(FleetClient, MoveTakesOverAJobOfAStaleNodeOnlyWhenItsClaimIsOld) {
  heartbeat("n1", 10'000);
  FleetJob busy = job("c");
  busy.klass = "";
  busy.node = "n1";
  ASSERT_TRUE(submit(store_, busy));
  put_claim(busy.id, "n1", std::string(kRunning), 2);
  advance(40'000);
  heartbeat("n2", 10'000);
  put_claim(busy.id, "n1", std::string(kRunning), 2);  // n1 is stale but still renews
  auto moved = move_pinned(store_, "n1", "n2", kNow);
  ASSERT_TRUE(moved);
  ASSERT_EQ(moved->size(), 1u);
  EXPECT_EQ((*moved)[0].action, MovedEntry::Action::kSkipped);
  EXPECT_NE((*moved)[0].detail.find("renews"), std::string::npos);
  advance(40'000);
  heartbeat("n2", 10'000);
  store_.reset_counts();
  moved = move_pinned(store_, "n1", "n2", kNow);
  ASSERT_TRUE(moved) << moved.error().message;
  ASSERT_EQ(moved->size(), 1u);
  EXPECT_EQ((*moved)[0].action, MovedEntry::Action::kTakenOver);
  EXPECT_FALSE(has(keys::claim(busy.id)));
  auto spec = read_job(store_, busy.id);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->node, "n2");
  EXPECT_TRUE(has(spec->entry()));
  EXPECT_FALSE(has(busy.entry()));
}

TEST_F(FleetClient, MoveRefusesAStaleOrUnknownTarget) {
  heartbeat("n1");
  heartbeat("n2");
  advance(60'000);
  heartbeat("n1");
  auto stale = move_pinned(store_, "n1", "n2", kNow);
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, Code::kFailedPrecondition);
  auto unknown = move_pinned(store_, "n1", "n3", kNow);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, Code::kNotFound);
  auto same = move_pinned(store_, "n1", "n1", kNow);
  ASSERT_FALSE(same);
  EXPECT_EQ(same.error().code, Code::kInvalidArgument);
}

TEST_F(FleetClient, MoveEndsAWaitingJobWhoseCancelWasAsked) {
  heartbeat("n1");
  heartbeat("n2");
  FleetJob j = job("a");
  j.klass = "";
  j.node = "n1";
  ASSERT_TRUE(submit(store_, j));
  put(keys::cancel(j.id), "{}");
  auto moved = move_pinned(store_, "n1", "n2", kNow);
  ASSERT_TRUE(moved);
  ASSERT_EQ(moved->size(), 1u);
  EXPECT_EQ((*moved)[0].action, MovedEntry::Action::kCancelled);
  EXPECT_EQ(claim_of(j.id).state, kCancelled);
  EXPECT_FALSE(has(j.entry()));
}

TEST_F(FleetClient, LogsOfTheCurrentAttempt) {
  FleetJob j = job("a");
  ASSERT_TRUE(submit(store_, j));
  auto early = read_log(store_, j.id, 0);
  ASSERT_FALSE(early);
  EXPECT_EQ(early.error().code, Code::kFailedPrecondition);
  put_claim(j.id, "n1", std::string(kRunning), 2);
  auto missing = read_log(store_, j.id, 0);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Code::kNotFound);
  put(keys::log(j.id, 2), "line 1\n");
  auto log = read_log(store_, j.id, 0);
  ASSERT_TRUE(log) << log.error().message;
  EXPECT_EQ(log->attempt, 2);
  EXPECT_EQ(log->object.body, "line 1\n");
  auto again = read_log(store_, j.id, 2, log->object.etag);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->object.not_modified);
}

}  // namespace
}  // namespace gpuq::fleet
