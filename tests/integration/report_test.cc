// SPDX-License-Identifier: Apache-2.0
// The dashboard's data end to end (docs/api.md "Timeline", "Report"; docs/report.md): a real
// daemon on fake GPUs, real short jobs, the fake probe staging a job's process on GPUs; then
// each job's user, a run's samples and seen GPUs, GET /v1/timeline, `gpuq report --json/--csv`,
// a status page of pending jobs in serving order and job.moved's undo fields.
#include <fstream>
#include <gtest/gtest.h>
#include <pwd.h>
#include <set>
#include <unistd.h>

#include "harness.h"
#include "unix_http.h"

namespace gpuq::testing {
namespace {

std::string my_user() {
  const passwd* pw = ::getpwuid(::getuid());
  return pw != nullptr ? pw->pw_name : std::to_string(::getuid());
}

nlohmann::json get_json(const Harness& h, const std::string& path) {
  HttpAnswer answer = unix_get(h.home() + "/gpuq.sock", path);
  EXPECT_EQ(answer.status, 200) << path << ": " << answer.body;
  auto j = nlohmann::json::parse(answer.body, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << answer.body;
  return j;
}

bool has_event(const Harness& h, const std::string& kind, const std::string& phase) {
  for (const auto& e : h.events()) {
    if (e["kind"] == kind && e["data"].value("phase", "") == phase) return true;
  }
  return false;
}

// Restores the probe's state file variable, which the daemon inherits at its start.
struct FakeGpuState {
  explicit FakeGpuState(const std::string& path) { setenv("GPUQ_FAKE_GPU_STATE", path.c_str(), 1); }
  ~FakeGpuState() { unsetenv("GPUQ_FAKE_GPU_STATE"); }
};

TEST(Report, TimelineAndReportOfRealRuns) {
  Harness h("fake:2");
  std::ofstream(h.home() + "/config.toml")
      << "[gpu]\nprobe_interval = \"100ms\"\n[watch]\ninterval = \"100ms\"\nidle_with_work = \"300ms\"\n";
  FakeGpuState state(h.path("gpu-state.json"));
  h.start();
  // Its shell shows up on both GPUs (as a job that ignores CUDA_VISIBLE_DEVICES would), busy.
  int64_t a = h.submit_sh(
      "printf '{\"gpus\":[{\"index\":0,\"utilization\":50,\"processes\":[{\"pid\":%d,\"used_memory_mib\":100}]},"
      "{\"index\":1,\"utilization\":50,\"processes\":[{\"pid\":%d,\"used_memory_mib\":100}]}]}' $$ $$ "
      "> gpu-state.tmp && mv gpu-state.tmp gpu-state.json; "
      "while [ ! -e done ]; do sleep 0.05; done; rm -f gpu-state.json",
      {"--gpus", "1", "--name", "report-a", "--est", "1h"});
  ASSERT_TRUE(h.wait_for(a, [](const nlohmann::json& job) {
    return !job["runs"].empty() && !job["runs"][0]["samples"].empty() && job["runs"][0]["seen_gpus"].size() == 2;
  })) << h.show(a).dump(2);
  nlohmann::json shown = h.show(a);
  EXPECT_EQ(shown["user"], my_user());
  const nlohmann::json& run = shown["runs"][0];
  EXPECT_EQ(run["seen_gpus"], nlohmann::json::parse("[0, 1]"));
  EXPECT_EQ(run["gpu_mismatch"], true);
  // [time_ms, utilisation, MiB]: the first probe after the start may come before the job wrote
  // the state file (idle then); the next sample is 30 s later.
  ASSERT_EQ(run["samples"][0].size(), 3u);
  EXPECT_GE(run["samples"][0][0].get<int64_t>(), run["started_at_ms"].get<int64_t>());
  EXPECT_TRUE(run["samples"][0][1] == 0 || run["samples"][0][1] == 50) << run["samples"].dump();
  EXPECT_TRUE(run["samples"][0][2] == 0 || run["samples"][0][2] == 200) << run["samples"].dump();
  std::string gpu_of_a = "gpu" + std::to_string(run["gpus"][0].get<int>());

  // A job that needs both GPUs waits while one stands free: an idle_with_work episode.
  int64_t c = h.submit_sh("true", {"--gpus", "2", "--est", "10m"});
  ASSERT_TRUE(wait_until([&] { return has_event(h, "queue.idle_with_work", "start"); }));
  int64_t now = h.health()["now_ms"].get<int64_t>();
  nlohmann::json timeline = get_json(
      h, "/v1/timeline?from_ms=" + std::to_string(now - 3'600'000) + "&to_ms=" + std::to_string(now + 3 * 3'600'000));
  EXPECT_EQ(timeline["gpus"], nlohmann::json::parse(R"(["gpu0", "gpu1"])"));
  ASSERT_EQ(timeline["runs"].size(), 1u) << timeline.dump(2);
  EXPECT_EQ(timeline["runs"][0]["job"], a);
  EXPECT_EQ(timeline["runs"][0]["name"], "report-a");
  EXPECT_EQ(timeline["runs"][0]["user"], my_user());
  EXPECT_EQ(timeline["runs"][0]["run"], 1);
  EXPECT_EQ(timeline["runs"][0]["gpus"], nlohmann::json::array({gpu_of_a}));
  EXPECT_TRUE(timeline["runs"][0]["end_ms"].is_null());
  EXPECT_EQ(timeline["runs"][0]["outcome"], "running");
  ASSERT_EQ(timeline["predicted"].size(), 1u) << timeline.dump(2);
  EXPECT_EQ(timeline["predicted"][0]["job"], c);
  EXPECT_EQ(timeline["predicted"][0]["gpus_requested"], 2);
  EXPECT_EQ(timeline["predicted"][0]["end_ms"].get<int64_t>() - timeline["predicted"][0]["start_ms"].get<int64_t>(),
            600'000);
  ASSERT_FALSE(timeline["idle_while_waiting"].empty()) << timeline.dump(2);
  EXPECT_EQ(timeline["idle_while_waiting"][0]["free_gpus"], 1);

  h.touch("done");
  ASSERT_EQ(h.gpuq({"wait", std::to_string(a), std::to_string(c), "--timeout", "30s"}).status, 0);
  int64_t b = h.submit_sh("exit 3", {"--gpus", "1"});
  ASSERT_TRUE(h.wait_for(b, [](const nlohmann::json& job) { return job["state"] == "failed"; }));

  timeline = get_json(h, "/v1/timeline?from_ms=" + std::to_string(now - 3'600'000) +
                             "&to_ms=" + std::to_string(h.health()["now_ms"].get<int64_t>() + 1));
  ASSERT_EQ(timeline["runs"].size(), 3u) << timeline.dump(2);
  EXPECT_EQ(timeline["runs"][0]["outcome"], "succeeded");
  EXPECT_TRUE(timeline["runs"][0]["end_ms"].is_number());
  EXPECT_TRUE(timeline["predicted"].empty());
  ASSERT_FALSE(timeline["idle_while_waiting"].empty());
  auto idle = timeline["idle_while_waiting"][0];
  EXPECT_LT(idle["from_ms"].get<int64_t>(), idle["to_ms"].get<int64_t>());

  nlohmann::json report = h.gpuq_json({"report", "--since", "1h", "--json"});
  EXPECT_EQ(report["by"], "user");
  EXPECT_EQ(report["gpus"], 2);
  EXPECT_DOUBLE_EQ(report["machine_gpu_hours"].get<double>(), 2.0);
  EXPECT_EQ(report["until_ms"].get<int64_t>() - report["since_ms"].get<int64_t>(), 3'600'000);
  ASSERT_EQ(report["groups"].size(), 1u) << report.dump(2);
  EXPECT_EQ(report["groups"][0]["key"], my_user());
  EXPECT_EQ(report["groups"][0]["runs"], 3);
  EXPECT_EQ(report["groups"][0]["jobs"], 3);
  EXPECT_GE(report["groups"][0]["share"].get<double>(), 0.0);
  ASSERT_EQ(report["wait"]["by_user"].size(), 1u);
  EXPECT_EQ(report["wait"]["by_user"][0]["key"], my_user());
  EXPECT_EQ(report["wait"]["by_user"][0]["jobs"], 3);
  ASSERT_EQ(report["wait"]["by_gpus"].size(), 2u);
  EXPECT_EQ(report["wait"]["by_gpus"][0]["gpus"], 1);
  EXPECT_EQ(report["wait"]["by_gpus"][0]["jobs"], 2);
  EXPECT_EQ(report["wait"]["by_gpus"][1]["gpus"], 2);
  EXPECT_GE(report["wait"]["by_gpus"][1]["max_s"].get<double>(), 0.0);
  EXPECT_TRUE(report["idle_held_gpu_hours"].is_number());
  std::set<std::string> lost_keys;
  for (const auto& [k, v] : report["lost_gpu_hours"].items()) lost_keys.insert(k);
  EXPECT_EQ(lost_keys, (std::set<std::string>{"failed", "timed-out", "preempted", "cancelled", "lost", "not-started"}));
  EXPECT_TRUE(report["idle_while_waiting_gpu_hours"].is_number());

  nlohmann::json by_outcome = h.gpuq_json({"report", "--since", "1h", "--by", "outcome", "--json"});
  std::set<std::string> outcomes;
  for (const auto& g : by_outcome["groups"]) outcomes.insert(g["key"].get<std::string>());
  EXPECT_EQ(outcomes, (std::set<std::string>{"succeeded", "failed"}));
  auto csv = h.gpuq({"report", "--since", "1h", "--by", "gpu", "--csv"});
  ASSERT_EQ(csv.status, 0) << csv.err;
  EXPECT_TRUE(csv.out.starts_with("gpu,gpu_hours,share,runs,jobs\n")) << csv.out;
  auto text = h.gpuq({"report"});
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("GPU-HOURS"), std::string::npos) << text.out;
}

TEST(Report, StatusPagesPendingJobsInServingOrderAndMovesCanBeUndone) {
  Harness h("fake:1");
  h.start();
  int64_t blocker = h.submit_sh("while [ ! -e done ]; do sleep 0.05; done", {"--gpus", "1"});
  ASSERT_TRUE(h.wait_for(blocker, [](const nlohmann::json& job) { return job["state"] == "running"; }));
  int64_t low = h.submit_sh("true", {"--gpus", "1", "--priority", "low"});
  int64_t first = h.submit_sh("true", {"--gpus", "1"});
  int64_t second = h.submit_sh("true", {"--gpus", "1"});
  int64_t urgent = h.submit_sh("true", {"--gpus", "1", "--priority", "high"});
  int64_t held = h.submit_sh("true", {"--gpus", "1", "--hold"});

  nlohmann::json page = get_json(h, "/v1/status?active=1&pending_limit=2&pending_offset=1");
  EXPECT_EQ(page["pending_total"], 4);
  std::vector<int64_t> ids;
  for (const auto& j : page["jobs"]) ids.push_back(j["id"].get<int64_t>());
  // The others by id, then the page (serving positions 2 and 3) in serving order.
  EXPECT_EQ(ids, (std::vector<int64_t>{blocker, held, first, second}));
  EXPECT_EQ(page["jobs"][2]["serving_position"], 2);
  EXPECT_EQ(page["jobs"][3]["serving_position"], 3);
  EXPECT_EQ(page["jobs"][2]["user"], my_user());
  EXPECT_FALSE(page.contains("held_total"));
  // held_limit lists the oldest held (and blocked) jobs and counts them all.
  int64_t held_too = h.submit_sh("true", {"--gpus", "1", "--hold"});
  nlohmann::json limited = get_json(h, "/v1/status?active=1&pending_limit=0&held_limit=1");
  ids.clear();
  for (const auto& j : limited["jobs"]) ids.push_back(j["id"].get<int64_t>());
  EXPECT_EQ(ids, (std::vector<int64_t>{blocker, held}));
  EXPECT_EQ(limited["held_total"], 2);
  EXPECT_EQ(limited["blocked_total"], 0);
  auto text = h.gpuq({"status"});
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("\n" + std::to_string(held_too) + " "), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("more held"), std::string::npos) << text.out;
  nlohmann::json all = get_json(h, "/v1/status?active=1");
  EXPECT_FALSE(all.contains("pending_total"));
  EXPECT_FALSE(all.contains("held_total"));
  for (const auto& j : all["jobs"]) {
    if (j["id"] == urgent) {
      EXPECT_EQ(j["serving_position"], 1);
    }
    if (j["id"] == low) {
      EXPECT_EQ(j["serving_position"], 4);
    }
  }
  // One user's view (gpuq status --user, --mine): that user's jobs, their serving positions
  // still among the whole queue's, read by the store (status_jobs with a user).
  nlohmann::json mine = get_json(h, "/v1/status?active=1&user=" + my_user());
  EXPECT_EQ(mine["jobs"].size(), all["jobs"].size());
  for (const auto& j : mine["jobs"]) {
    if (j["id"] == urgent) {
      EXPECT_EQ(j["serving_position"], 1);
    }
    if (j["id"] == second) {
      EXPECT_EQ(j["serving_position"], 3);
    }
    if (j["id"] == held) {
      EXPECT_FALSE(j.contains("serving_position"));  // pending jobs alone have one
    }
  }
  EXPECT_TRUE(get_json(h, "/v1/status?active=1&user=nobody-of-this-box")["jobs"].empty());
  // A user's page (user_page=1, what gpuq status --mine asks for): the first of theirs to be
  // served, where it stands in the whole queue, and their totals.
  nlohmann::json my_page = get_json(h, "/v1/status?active=1&pending_limit=1&held_limit=1&user_page=1&user=" + my_user());
  EXPECT_EQ(my_page["pending_total"], 4);
  EXPECT_EQ(my_page["held_total"], 2);
  ids.clear();
  for (const auto& j : my_page["jobs"]) ids.push_back(j["id"].get<int64_t>());
  EXPECT_EQ(ids, (std::vector<int64_t>{blocker, held, urgent}));
  EXPECT_EQ(my_page["jobs"][2]["serving_position"], 1);
  nlohmann::json none = get_json(h, "/v1/status?pending_limit=5&held_limit=5&user_page=1&user=nobody-of-this-box");
  EXPECT_EQ(none["pending_total"], 0);
  EXPECT_TRUE(none["jobs"].empty());
  EXPECT_EQ(unix_get(h.home() + "/gpuq.sock", "/v1/status?pending_limit=5&user_page=1").status, 400);
  EXPECT_EQ(unix_get(h.home() + "/gpuq.sock", "/v1/status?user=x&user_page=1").status, 400);
  EXPECT_EQ(unix_get(h.home() + "/gpuq.sock", "/v1/status?pending_limit=5&user=x&user_page=yes").status, 400);
  auto mine_text = h.gpuq({"status", "--mine"});
  ASSERT_EQ(mine_text.status, 0) << mine_text.err;
  EXPECT_NE(mine_text.out.find("\n" + std::to_string(urgent) + " "), std::string::npos) << mine_text.out;
  EXPECT_EQ(unix_get(h.home() + "/gpuq.sock", "/v1/status?pending_offset=3").status, 400);

  // Moving `second` to the top says where it was: after `first`.
  ASSERT_EQ(h.gpuq({"move", std::to_string(second), "--top"}).status, 0);
  nlohmann::json moved;
  for (const auto& e : h.events()) {
    if (e["kind"] == "job.moved") moved = e["data"];
  }
  EXPECT_EQ(moved["from_after"], first);
  EXPECT_EQ(moved["from_priority"], 50);
  EXPECT_TRUE(moved["from_queue_order"].is_number());
  h.touch("done");
}

}  // namespace
}  // namespace gpuq::testing
