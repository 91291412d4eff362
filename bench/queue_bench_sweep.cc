// SPDX-License-Identifier: Apache-2.0
// queue_bench's sweep part (queue_bench_parts.h): one array of many elements.
#include "queue_bench_parts.h"

namespace gpuq::bench {

SweepCost measure_sweep(const std::string& binary, const std::string& dir, int count, int calls) {
  using gpuq::cli::Method;
  SweepCost cost;
  // Past the default [sweeps] max_elements, the bench raises it: the cost is what it measures.
  std::string config = count > 10'000 ? fmt::format("[sweeps]\nmax_elements = {}\n", count) : "";
  Daemon d(binary, "fake:8", dir, config);
  d.call(Method::kPost, "/v1/drain");  // every element stays queued
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  int pid = d.pid();
  cost.rss_before = rss_mib(pid);
  json env = json::object();
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    auto eq = entry.find('=');
    if (eq != std::string::npos && entry.rfind("GPUQ_", 0) != 0) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  json request = {{"name", "sweep"}, {"argv", {"python", "train.py", "--shard", "{i}"}},
                  {"cwd", "/tmp"}, {"env", env}, {"gpus", 1}, {"est_ms", 600'000},
                  {"array", fmt::format("0-{}", count - 1)}};
  auto t0 = Clock::now();
  d.call(Method::kPost, "/v1/jobs", request.dump(), 120'000);
  cost.submit_ms = ms_since(t0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  cost.rss_after = rss_mib(pid);
  for (int i = 0; i < calls; ++i) {
    // A change the status must show: each call after it starts from a changed queue.
    d.call(Method::kPost, i % 2 ? "/v1/jobs/1/release" : "/v1/jobs/1/hold");
    cost.status_after_change_ms.push_back(run_status(d));
    cost.status_ms.push_back(run_status(d));
  }
  auto t1 = Clock::now();
  d.call(Method::kGet, "/v1/arrays/sweep", "", 120'000);
  cost.array_ms = ms_since(t1);
  // A job that is not an element shows its ETA: each status after a change simulates the
  // whole queue, the array's elements ahead of it included.
  json behind = {{"argv", {"true"}}, {"cwd", "/tmp"}, {"gpus", 1}, {"est_ms", 60'000}};
  d.call(Method::kPost, "/v1/jobs", behind.dump());
  for (int i = 0; i < calls; ++i) {
    d.call(Method::kPost, i % 2 ? "/v1/jobs/1/release" : "/v1/jobs/1/hold");
    cost.mixed_after_change_ms.push_back(run_status(d));
  }
  cost.restart_ms = d.restart();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  cost.rss_restarted = rss_mib(d.pid());
  auto t2 = Clock::now();
  // As `gpuq cancel sweep` asks: the elements' ids in the answer, not a million jobs.
  d.call(Method::kPost, "/v1/arrays/sweep/cancel", R"({"brief": true})", 600'000);
  cost.cancel_ms = ms_since(t2);
  return cost;
}

void print_sweep(const SweepCost& cost, int count) {
  std::printf("%-44s %12d\n", "array elements (one request, drained fake:8)", count);
  std::printf("%-44s %12.1f\n", "  queued by one POST /v1/jobs (ms)", cost.submit_ms);
  std::printf("%-44s %12.1f\n", "  daemon RSS before (MiB)", cost.rss_before);
  std::printf("%-44s %12.1f\n", "  daemon RSS with them queued (MiB)", cost.rss_after);
  std::printf("%-44s %12.1f\n", "  difference (MiB)", cost.rss_after - cost.rss_before);
  std::printf("%-44s %12.1f\n", "  gpuq status after a change, p50 (ms)", percentile(cost.status_after_change_ms, 0.5));
  std::printf("%-44s %12.1f\n", "  gpuq status after a change, max (ms)", percentile(cost.status_after_change_ms, 1.0));
  std::printf("%-44s %12.1f\n", "  gpuq status again, p50 (ms)", percentile(cost.status_ms, 0.5));
  std::printf("%-44s %12.1f\n", "  GET /v1/arrays/NAME (ms)", cost.array_ms);
  std::printf("%-44s %12.1f\n", "  ... and a job behind it: status p50 (ms)", percentile(cost.mixed_after_change_ms, 0.5));
  std::printf("%-44s %12.0f\n", "  restart with them queued, to first pass (ms)", cost.restart_ms);
  std::printf("%-44s %12.1f\n", "  daemon RSS after the restart (MiB)", cost.rss_restarted);
  std::printf("%-44s %12.0f\n", "  cancel of the whole array, brief (ms)", cost.cancel_ms);
}

}  // namespace gpuq::bench
