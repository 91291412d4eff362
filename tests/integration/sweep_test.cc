// SPDX-License-Identifier: Apache-2.0
// Sweeps end to end (docs/sweeps.md): `gpuq submit --array/--grid` through the CLI, the API and
// a real daemon on fake GPUs, with real processes: what each element runs and sees, the cap on
// running elements (read from the event log, not from timing), idempotent submits, refusals.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "harness.h"
#include "unix_http.h"

namespace gpuq::testing {
namespace {

// The most elements running at once, replayed from the event log's starts and ends.
int most_running_at_once(const std::vector<nlohmann::json>& events) {
  int running = 0, most = 0;
  for (const auto& e : events) {
    std::string kind = e.value("kind", "");
    if (kind == "job.started") most = std::max(most, ++running);
    if (kind == "job.succeeded" || kind == "job.failed") --running;
  }
  return most;
}

TEST(Sweeps, AnArrayCappedAtTwoRunsEveryElementWithItsIndexNeverMoreThanTwoAtOnce) {
  Harness h("fake:4");
  h.start();
  auto submitted = h.gpuq({"submit", "--array", "0-19%2", "--name", "shards", "--gpus", "1", "--",
                           "sh", "-c", "echo index $GPUQ_ARRAY_INDEX arg {i} array $GPUQ_ARRAY_ID"});
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  EXPECT_EQ(submitted.out, "submitted array 1 (shards, 20 elements: jobs 1-20)\n");
  std::vector<std::string> names;
  for (int i = 0; i < 20; ++i) names.push_back("shards[" + std::to_string(i) + "]");
  std::vector<std::string> wait = {"wait", "--timeout", "60s"};
  wait.insert(wait.end(), names.begin(), names.end());
  auto waited = h.gpuq(wait);
  ASSERT_EQ(waited.status, 0) << waited.err;
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(h.gpuq({"logs", names[i]}).out, fmt::format("index {} arg {} array 1\n", i, i));
  }
  EXPECT_EQ(most_running_at_once(h.events()), 2);
  nlohmann::json job = h.gpuq_json({"show", "shards[4]", "--json"});
  EXPECT_EQ(job["name"], "shards[4]");
  EXPECT_EQ(job["array"], 1);

  // The same array again is the one queued; --id-only lists its elements.
  auto again = h.gpuq({"submit", "--id-only", "--array", "0-19%2", "--name", "shards", "--gpus", "1",
                       "--", "sh", "-c", "echo index $GPUQ_ARRAY_INDEX arg {i} array $GPUQ_ARRAY_ID"});
  ASSERT_EQ(again.status, 0) << again.err;
  std::string ids;
  for (int i = 1; i <= 20; ++i) ids += std::to_string(i) + "\n";
  EXPECT_EQ(again.out, ids);
  auto changed = h.gpuq({"submit", "--array", "0-20%2", "--name", "shards", "--", "true"});
  EXPECT_EQ(changed.status, 1);
  EXPECT_NE(changed.err.find("an array named 'shards' already exists"), std::string::npos)
      << changed.err;
}

TEST(Sweeps, AGridsElementsAreNamedByAndSeeTheirParameters) {
  Harness h("fake:2");
  h.start();
  auto submitted = h.gpuq({"submit", "--grid", "lr=1e-4,3e-4", "--grid", "seed=0..2", "--name",
                           "g", "--json", "--", "sh", "-c",
                           "echo lr {lr} $GPUQ_PARAM_LR seed {seed} $GPUQ_PARAM_SEED"});
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  nlohmann::json answer = nlohmann::json::parse(submitted.out);
  EXPECT_EQ(answer["array"]["name"], "g");
  EXPECT_EQ(answer["array"]["size"], 6);
  EXPECT_EQ(answer["array"]["sweep"], (nlohmann::json{{"grid", {"lr=1e-4,3e-4", "seed=0..2"}}}));
  ASSERT_EQ(answer["jobs"].size(), 6u);
  EXPECT_EQ(answer["jobs"][4]["name"], "g[lr=3e-4,seed=1]");
  ASSERT_EQ(h.gpuq({"wait", "--timeout", "60s", "g[lr=3e-4,seed=1]", "g[lr=1e-4,seed=2]"}).status, 0);
  EXPECT_EQ(h.gpuq({"logs", "g[lr=3e-4,seed=1]"}).out, "lr 3e-4 3e-4 seed 1 1\n");
  EXPECT_EQ(h.gpuq({"logs", "g[lr=1e-4,seed=2]"}).out, "lr 1e-4 1e-4 seed 2 2\n");
}

TEST(Sweeps, BadSweepsAreUsageErrorsAndQueueNothing) {
  Harness h("fake:2");
  h.start();
  std::map<std::vector<std::string>, std::string> cases = {
      {{"--array", "9-0"}, "--array range '9-0' ends before it starts; write 0-9"},
      {{"--array", "0-9%0"}, "%0 would never run an element"},
      {{"--grid", "lr=1,1"}, "lists 1 twice"},
      {{"--grid", "a=1", "--grid", "a=2"}, "--grid a is given twice"},
      {{"--array", "1", "--grid", "a=1"}, "--array and --grid: give one"},
      {{"--max-running", "2"}, "--max-running caps an array or a grid"},
  };
  for (const auto& [flags, message] : cases) {
    std::vector<std::string> args = {"submit"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "true"});
    auto r = h.gpuq(args);
    EXPECT_EQ(r.status, 2) << flags.front() << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
  // The size is the daemon's to judge: its config.toml may allow more (or fewer).
  auto big = h.gpuq({"submit", "--grid", "a=0..200", "--grid", "b=0..200", "--", "true"});
  EXPECT_EQ(big.status, 1) << big.err;
  EXPECT_NE(big.err.find("field 'grid': the grid (a 201 × b 201) has 40401 elements, more than "
                         "[sweeps] max_elements (10000)"),
            std::string::npos)
      << big.err;
  EXPECT_EQ(h.gpuq_json({"status", "--json"})["jobs"].size(), 0u);
}

TEST(Sweeps, TheLimitIsTheDaemonsConfig) {
  Harness h("fake:1");
  std::ofstream(h.home() + "/config.toml") << "[sweeps]\nmax_elements = 5\n";
  h.start();
  auto refused = h.gpuq({"submit", "--array", "0-5", "--", "true"});
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.err.find("the array has 6 elements, more than [sweeps] max_elements (5)"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(h.gpuq({"submit", "--array", "0-4", "--", "true"}).status, 0);
}

TEST(Sweeps, WaitOnAnArrayWaitsForEveryElementAndTheArraySaysHowEachEnded) {
  Harness h("fake:2");
  h.start();
  auto submitted = h.gpuq({"submit", "--array", "0-3", "--name", "mixed", "--", "sh", "-c",
                           "exit $(( {i} == 2 ))"});
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  auto waited = h.gpuq({"wait", "mixed", "--timeout", "60s"});
  EXPECT_EQ(waited.status, 1) << "mixed[2] failed: " << waited.out << waited.err;
  auto answer = unix_get(h.home() + "/gpuq.sock", "/v1/arrays/mixed");
  ASSERT_EQ(answer.status, 200) << answer.body;
  nlohmann::json body = nlohmann::json::parse(answer.body);
  EXPECT_EQ(body["array"]["name"], "mixed");
  EXPECT_EQ(body["counts"], (nlohmann::json{{"failed", 1}, {"succeeded", 3}}));
  ASSERT_EQ(body["jobs"].size(), 4u);
  EXPECT_EQ(body["jobs"][2], (nlohmann::json{{"id", 3}, {"name", "mixed[2]"}, {"state", "failed"},
                                             {"runs", 1}, {"exit_code", 1}, {"signal", nullptr}}));
  EXPECT_EQ(unix_get(h.home() + "/gpuq.sock", "/v1/arrays/1").status, 200) << "by id too";
  auto missing = unix_get(h.home() + "/gpuq.sock", "/v1/arrays/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_NE(missing.body.find("no array named 'nope'"), std::string::npos) << missing.body;
  auto unknown = h.gpuq({"wait", "nope"});
  EXPECT_EQ(unknown.status, 1);
  EXPECT_NE(unknown.err.find("no job named 'nope'"), std::string::npos) << unknown.err;
}

TEST(Sweeps, CancelHoldReleaseAndRetryActOnAnArraysElements) {
  Harness h("fake:1");
  h.start();
  std::ofstream(h.path("gate")) << "";
  // Element 1 fails; the others wait on a file the test removes, one GPU at a time.
  auto submitted = h.gpuq({"submit", "--array", "0-3", "--name", "four", "--gpus", "1", "--", "sh",
                           "-c", "[ {i} = 1 ] && exit 3; while [ -e gate ]; do sleep 0.05; done"});
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  ASSERT_TRUE(h.wait_for(1, [](const nlohmann::json& job) { return job["state"] == "running"; }));
  auto held = h.gpuq({"hold", "four"});
  EXPECT_EQ(held.status, 0) << held.err;
  EXPECT_EQ(held.out, "held job 2\nheld job 3\nheld job 4\n") << "the pending ones; job 1 runs";
  auto released = h.gpuq({"release", "four"});
  EXPECT_EQ(released.out, "released job 2\nreleased job 3\nreleased job 4\n") << released.err;
  // The API's brief answer: the ids of the elements acted on, no jobs (what the table asks for).
  auto brief = unix_post(h.home() + "/gpuq.sock", "/v1/arrays/four/hold", R"({"brief": true})");
  ASSERT_EQ(brief.status, 200) << brief.body;
  nlohmann::json held_ids = nlohmann::json::parse(brief.body);
  EXPECT_EQ(held_ids["ids"], (nlohmann::json{2, 3, 4}));
  EXPECT_FALSE(held_ids.contains("jobs")) << brief.body;
  EXPECT_EQ(held_ids["array"]["name"], "four");
  auto full = unix_post(h.home() + "/gpuq.sock", "/v1/arrays/four/release", "{}");
  ASSERT_EQ(full.status, 200) << full.body;
  nlohmann::json released_jobs = nlohmann::json::parse(full.body);
  ASSERT_EQ(released_jobs["jobs"].size(), 3u) << "without brief, the jobs as before";
  EXPECT_EQ(released_jobs["jobs"][0]["name"], "four[1]");
  EXPECT_FALSE(released_jobs.contains("ids"));
  std::filesystem::remove(h.path("gate"));
  ASSERT_EQ(h.gpuq({"wait", "four", "--timeout", "60s"}).status, 1);
  auto again = h.gpuq({"retry", "four", "--failed"});
  EXPECT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(again.out, "requeued job 2\n");
  ASSERT_EQ(h.gpuq({"wait", "four[1]", "--timeout", "60s"}).status, 1);
  auto cancelled = h.gpuq({"cancel", "four"});
  EXPECT_EQ(cancelled.status, 1) << "every element has finished";
  EXPECT_NE(cancelled.err.find("cannot cancel array four: array four has no element to cancel"),
            std::string::npos)
      << cancelled.err;
  auto nothing = h.gpuq({"cancel", "nope"});
  EXPECT_EQ(nothing.status, 1);
  EXPECT_NE(nothing.err.find("no job named 'nope'"), std::string::npos) << nothing.err;
}

}  // namespace
}  // namespace gpuq::testing
