// SPDX-License-Identifier: Apache-2.0
// Priorities, FIFO and GPU placement on a real daemon with simulated GPUs.
#include <algorithm>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <set>
#include <sstream>

#include "harness.h"

namespace gpuq::testing {
namespace {

// A job that waits for a file, so a test can hold GPUs busy for as long as it needs.
std::string wait_for_file(const std::string& path) {
  return "while [ ! -e '" + path + "' ]; do sleep 0.02; done";
}

// Records "<name> <CUDA_VISIBLE_DEVICES> <start_ns> <end_ns>" to trace.txt.
std::string traced(const std::string& work) {
  return "s=$(date +%s%N); sleep 0.15; echo \"$GPUQ_JOB_NAME $CUDA_VISIBLE_DEVICES $s "
         "$(date +%s%N)\" >> '" + work + "/trace.txt'";
}

std::vector<int64_t> start_order(const std::vector<nlohmann::json>& events) {
  std::vector<int64_t> order;
  for (const auto& e : events) {
    if (e["kind"] == "job.started") order.push_back(e["job"].get<int64_t>());
  }
  return order;
}

TEST(QueueOrder, PriorityThenFifoWithDisjointGpus) {
  Harness h("fake:2");
  h.start();
  int64_t b1 = h.submit_sh(wait_for_file(h.path("go")), {"--gpus", "1", "--name", "blocker1"});
  int64_t b2 = h.submit_sh(wait_for_file(h.path("go")), {"--gpus", "1", "--name", "blocker2"});
  auto running = [](const nlohmann::json& j) { return j["state"] == "running"; };
  ASSERT_TRUE(h.wait_for(b1, running));
  ASSERT_TRUE(h.wait_for(b2, running));
  std::map<int64_t, std::string> names;
  for (auto [name, priority] : std::vector<std::pair<std::string, std::string>>{
           {"low1", "low"}, {"low2", "low"}, {"normal1", "normal"}, {"high1", "high"},
           {"high2", "high"}, {"normal2", "50"}}) {
    names[h.submit_sh(traced(h.work()), {"--gpus", "1", "--priority", priority, "--name", name})] = name;
  }
  // While both GPUs are held, every job waits and says why.
  auto status = h.gpuq_json({"status", "--json"});
  for (const auto& job : status["jobs"]) {
    if (job["state"] == "pending") {
      EXPECT_FALSE(job["reason"].get<std::string>().empty());
    }
  }
  h.touch("go");
  auto r = h.gpuq({"wait", "high1", "high2", "normal1", "normal2", "low1", "low2", "--timeout", "60s"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;

  std::vector<std::string> order;
  for (int64_t id : start_order(h.events())) {
    if (names.count(id)) order.push_back(names[id]);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"high1", "high2", "normal1", "normal2", "low1", "low2"}));

  // No two jobs that overlapped in time shared a GPU; each saw exactly one GPU.
  struct Span { std::string name, gpus; int64_t start, end; };
  std::vector<Span> spans;
  std::ifstream trace(h.path("trace.txt"));
  for (Span s; trace >> s.name >> s.gpus >> s.start >> s.end;) spans.push_back(s);
  ASSERT_EQ(spans.size(), 6u);
  for (const auto& s : spans) EXPECT_TRUE(s.gpus == "0" || s.gpus == "1") << s.name << " " << s.gpus;
  for (size_t i = 0; i < spans.size(); ++i) {
    for (size_t j = i + 1; j < spans.size(); ++j) {
      bool overlap = spans[i].start < spans[j].end && spans[j].start < spans[i].end;
      if (overlap) {
        EXPECT_NE(spans[i].gpus, spans[j].gpus) << spans[i].name << " and " << spans[j].name;
      }
    }
  }
}

TEST(QueueOrder, TwoGpuJobIsNotStarvedByOneGpuJobs) {
  Harness h("fake:2");
  h.start();
  int64_t a = h.submit_sh(wait_for_file(h.path("go-a")), {"--gpus", "1"});
  ASSERT_TRUE(h.wait_for(a, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  int64_t big = h.submit_sh("echo \"$CUDA_VISIBLE_DEVICES\" > big.txt", {"--gpus", "2"});
  int64_t small = h.submit_sh("true", {"--gpus", "1"});
  // One GPU is free, but the 2-GPU job came first: the 1-GPU job behind it must not take it.
  ASSERT_TRUE(h.wait_for(big, [](const nlohmann::json& j) {
    return j["reason"].get<std::string>().find("needs 2 GPUs, 1 free") != std::string::npos;
  })) << h.show(big).dump();
  h.wait_passes(2);  // two scheduling passes have seen the 1-GPU job and the free GPU
  auto s = h.show(small);
  EXPECT_EQ(s["state"], "pending");
  EXPECT_NE(s["reason"].get<std::string>().find("behind 1 better job"), std::string::npos) << s.dump();
  h.touch("go-a");
  ASSERT_EQ(h.gpuq({"wait", std::to_string(big), std::to_string(small), "--timeout", "30s"}).status, 0);
  std::ifstream in(h.path("big.txt"));
  std::string devices;
  in >> devices;
  EXPECT_EQ(devices, "0,1");
  auto order = start_order(h.events());
  auto pos = [&](int64_t id) { return std::find(order.begin(), order.end(), id) - order.begin(); };
  EXPECT_LT(pos(big), pos(small));
  EXPECT_EQ(h.show(big)["runs"][0]["gpus"], nlohmann::json::array({0, 1}));
}

TEST(QueueOrder, ZeroGpuJobsRunBesideGpuWork) {
  Harness h("fake:1");
  h.start();
  int64_t gpu_job = h.submit_sh(wait_for_file(h.path("go")), {"--gpus", "1"});
  int64_t cpu_job = h.submit_sh("echo \"[$CUDA_VISIBLE_DEVICES]\" > cpu.txt", {"--gpus", "0"});
  ASSERT_EQ(h.gpuq({"wait", std::to_string(cpu_job), "--timeout", "30s"}).status, 0);
  EXPECT_EQ(h.show(gpu_job)["state"], "running");
  std::ifstream in(h.path("cpu.txt"));
  std::string seen;
  in >> seen;
  EXPECT_EQ(seen, "[]");  // a job without GPUs sees none
  h.touch("go");
}

}  // namespace
}  // namespace gpuq::testing
