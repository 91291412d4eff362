// SPDX-License-Identifier: Apache-2.0
#include "daemon/readiness.h"

#include <gtest/gtest.h>
#include <map>

namespace gpuq::daemon {
namespace {

struct Case {
  const char* name;
  Dependency::Kind kind;
  std::optional<JobState> target;
  DependencyVerdict::Kind expected;
};

TEST(Readiness, EveryKindAgainstEveryState) {
  using K = Dependency::Kind;
  using V = DependencyVerdict::Kind;
  using S = JobState;
  std::vector<Case> cases = {
      {"afterok running", K::kAfterOk, S::kRunning, V::kWaiting},
      {"afterok succeeded", K::kAfterOk, S::kSucceeded, V::kSatisfied},
      {"afterok skipped", K::kAfterOk, S::kSkipped, V::kSatisfied},
      {"afterok failed", K::kAfterOk, S::kFailed, V::kImpossible},
      {"afterok cancelled", K::kAfterOk, S::kCancelled, V::kImpossible},
      {"afterok blocked", K::kAfterOk, S::kBlocked, V::kImpossible},
      {"afterok held", K::kAfterOk, S::kHeld, V::kWaiting},
      {"afterany failed", K::kAfterAny, S::kFailed, V::kSatisfied},
      {"afterany succeeded", K::kAfterAny, S::kSucceeded, V::kSatisfied},
      {"afterany skipped", K::kAfterAny, S::kSkipped, V::kSatisfied},
      {"afterany cancelled", K::kAfterAny, S::kCancelled, V::kSatisfied},
      {"afterany pending", K::kAfterAny, S::kPending, V::kWaiting},
      {"afterany held", K::kAfterAny, S::kHeld, V::kWaiting},
      {"afterany blocked", K::kAfterAny, S::kBlocked, V::kImpossible},
      {"afternotok failed", K::kAfterNotOk, S::kFailed, V::kSatisfied},
      {"afternotok cancelled", K::kAfterNotOk, S::kCancelled, V::kSatisfied},
      {"afternotok succeeded", K::kAfterNotOk, S::kSucceeded, V::kImpossible},
      {"afternotok skipped", K::kAfterNotOk, S::kSkipped, V::kImpossible},
      {"afternotok running", K::kAfterNotOk, S::kRunning, V::kWaiting},
      {"afternotok blocked", K::kAfterNotOk, S::kBlocked, V::kImpossible},
      {"unknown job", K::kAfterOk, std::nullopt, V::kImpossible},
  };
  for (const Case& c : cases) {
    ActiveJob job;
    job.rare.edit().deps = {{c.kind, "12", 12}};
    auto verdict = evaluate_job_dependencies(job, [&](int64_t) { return c.target; });
    EXPECT_EQ(verdict.kind, c.expected) << c.name;
  }
}

TEST(Readiness, ImpossibleWinsOverWaitingAndSaysHowToRelease) {
  ActiveJob job;
  job.rare.edit().deps = {{Dependency::Kind::kAfterOk, "a", 1}, {Dependency::Kind::kAfterOk, "b", 2}};
  std::map<int64_t, JobState> states = {{1, JobState::kRunning}, {2, JobState::kFailed}};
  auto verdict = evaluate_job_dependencies(job, [&](int64_t id) { return states[id]; });
  EXPECT_EQ(verdict.kind, DependencyVerdict::Kind::kImpossible);
  EXPECT_EQ(verdict.text(), "job 2 failed (afterok); `gpuq retry 2` releases this job");
  states[2] = JobState::kSucceeded;
  verdict = evaluate_job_dependencies(job, [&](int64_t id) { return states[id]; });
  EXPECT_EQ(verdict.kind, DependencyVerdict::Kind::kWaiting);
  EXPECT_EQ(verdict.text(), "waiting for job 1 (running)");
}

TEST(Readiness, TheFirstUnmetDependencyIsTheReason) {
  ActiveJob job;
  job.rare.edit().deps = {{Dependency::Kind::kAfterOk, "a", 1},
              {Dependency::Kind::kAfterNotOk, "b", 2},
              {Dependency::Kind::kAfterAny, "c", 3}};
  std::map<int64_t, JobState> states = {
      {1, JobState::kSucceeded}, {2, JobState::kRunning}, {3, JobState::kPending}};
  auto verdict = evaluate_job_dependencies(job, [&](int64_t id) { return states[id]; });
  EXPECT_EQ(verdict.kind, DependencyVerdict::Kind::kWaiting);
  EXPECT_EQ(verdict.job, 2);
  EXPECT_EQ(verdict.text(), "waiting for job 2 (running; runs only if it fails)");
}

TEST(Readiness, FileAndRequiresAreNotJudgedHere) {
  ActiveJob job;
  job.rare.edit().deps = {{Dependency::Kind::kFile, "x", 0}, {Dependency::Kind::kRequires, "false", 0}};
  auto verdict = evaluate_job_dependencies(job, [](int64_t) { return std::nullopt; });
  EXPECT_EQ(verdict.kind, DependencyVerdict::Kind::kSatisfied);
}

}  // namespace
}  // namespace gpuq::daemon
