// SPDX-License-Identifier: Apache-2.0
// queue_bench's queued part (queue_bench_parts.h): a drained daemon with many jobs queued.
#include "queue_bench_parts.h"

namespace gpuq::bench {

struct PassTime {
  int64_t pass = 0;
  double ms = 0, starts_ms = 0;  // the whole pass; of it, starting runs
};
PassTime last_pass(Daemon& d) {
  json health = d.call(gpuq::cli::Method::kGet, "/v1/health");
  return {health.value("pass", int64_t{0}), health.value("last_pass_us", 0) / 1000.0,
          health.value("last_pass_starts_us", 0) / 1000.0};
}

// Does `change`, then waits for the pass after it and returns its time (ms); with `starts_ms`,
// also the part of it spent starting runs.
double pass_after(Daemon& d, const std::function<void()>& change, double* starts_ms = nullptr) {
  int64_t before = last_pass(d).pass;
  change();
  while (true) {
    PassTime t = last_pass(d);
    if (starts_ms) *starts_ms = t.starts_ms;
    if (t.pass > before) return t.ms;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

QueuedCost measure_queued(const std::string& binary, const std::string& dir, int count, int bulk,
                          int status_calls) {
  using gpuq::cli::Method;
  QueuedCost cost;
  // The watchers look often here, so that their last look saw every queued job.
  Daemon d(binary, "fake:64", dir, "[watch]\ninterval = \"200ms\"\n");
  d.call(Method::kPost, "/v1/drain");  // keep every job queued
  const int batch = 5000;
  for (int first = 0; first < count; first += batch) {
    json plan = {{"jobs", json::array()}};
    for (int i = first; i < std::min(count, first + batch); ++i) {
      plan["jobs"].push_back({{"name", fmt::format("q{}", i)}, {"argv", {"true"}}, {"cwd", "/tmp"},
                              {"env", json::object()}, {"gpus", 1 + i % 8},
                              {"priority", 10 + i % 80}, {"est_ms", 60'000 + (i % 100) * 1000}});
    }
    d.call(Method::kPost, "/v1/plans", plan.dump(), 120'000);
  }
  if (bulk > 0) {
    json plan = {{"jobs", json::array()}};
    auto job = [](const std::string& name, int i) {
      return json{{"name", name}, {"argv", {"true"}}, {"cwd", "/tmp"}, {"env", json::object()},
                  {"gpus", 1 + i % 8}, {"priority", 10 + i % 80}, {"est_ms", 60'000}};
    };
    plan["jobs"].push_back(job("gate", 0));
    plan["jobs"].back()["hold"] = true;
    for (int i = 0; i < bulk; ++i) {
      plan["jobs"].push_back(job(fmt::format("h{}", i), i));
      plan["jobs"].back()["hold"] = true;
      plan["jobs"].push_back(job(fmt::format("d{}", i), i));
      plan["jobs"].back()["after_any"] = {"gate"};
    }
    d.call(Method::kPost, "/v1/plans", plan.dump(), 120'000);
  }
  // Let the daemon settle, then read its resident memory, its last pass and its last look.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  json status = d.call(Method::kGet, "/v1/health");
  cost.rss_mib = rss_mib(status["pid"].get<int>());
  cost.settled_ms = status.value("last_pass_us", 0) / 1000.0;
  cost.look_ms = status.value("last_look_us", 0) / 1000.0;
  std::fprintf(stderr, "queued: %d jobs queued and settled\n", count);
  cost.hold_ms = pass_after(d, [&] { d.call(Method::kPost, "/v1/jobs/q0/hold"); });
  cost.release_ms = pass_after(d, [&] { d.call(Method::kPost, "/v1/jobs/q0/release"); });
  for (int i = 0; i < bulk; ++i) {
    cost.bulk_release_ms.push_back(
        pass_after(d, [&] { d.call(Method::kPost, fmt::format("/v1/jobs/h{}/release", i)); }));
  }
  std::fprintf(stderr, "queued: %d held jobs released\n", bulk);
  if (bulk > 0) {
    cost.dependency_ms = pass_after(d, [&] { d.call(Method::kPost, "/v1/jobs/gate/cancel"); });
  }
  for (int i = 0; i < status_calls; ++i) cost.status_ms.push_back(run_status(d));
  for (int i = 0; i < status_calls; ++i) {
    cost.user_status_ms.push_back(run_status(d, {"--user", "someone-else"}));
  }
  cost.restart_ms = d.restart();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  cost.rss_restarted_mib = rss_mib(d.pid());
  std::fprintf(stderr, "queued: restarted\n");
  cost.undrain_ms =
      pass_after(d, [&] { d.call(Method::kPost, "/v1/undrain"); }, &cost.undrain_starts_ms);
  return cost;
}

void print_queued(const QueuedCost& cost, int count, int bulk) {
  std::printf("%-44s %12d\n", "queued jobs (drained daemon, fake:64)", count);
  std::printf("%-44s %12.1f\n", "daemon RSS with them queued (MiB)", cost.rss_mib);
  std::printf("%-44s %12.2f\n", "daemon's last scheduling pass (ms)", cost.settled_ms);
  std::printf("%-44s %12.2f\n", "watchers' last look (ms)", cost.look_ms);
  std::printf("%-44s %12.2f\n", "pass after a hold (ms)", cost.hold_ms);
  std::printf("%-44s %12.2f\n", "pass after a release (ms)", cost.release_ms);
  if (bulk > 0) {
    std::printf("%-44s %12d\n", "held jobs released one by one", bulk);
    std::printf("%-44s %12.2f\n", "  pass after each, p50 (ms)", percentile(cost.bulk_release_ms, 0.50));
    std::printf("%-44s %12.2f\n", "  pass after each, max (ms)", percentile(cost.bulk_release_ms, 1.0));
    std::printf("%-44s %12.2f\n", "pass after a dependency ends (ms)", cost.dependency_ms);
    std::printf("%-44s %12d\n", "  jobs it makes ready", bulk);
  }
  std::printf("%-44s %12.1f\n", "gpuq status with them queued, p50 (ms)", percentile(cost.status_ms, 0.5));
  std::printf("%-44s %12.1f\n", "gpuq status with them queued, max (ms)", percentile(cost.status_ms, 1.0));
  std::printf("%-44s %12.1f\n", "gpuq status --user (none of them), p50 (ms)", percentile(cost.user_status_ms, 0.5));
  std::printf("%-44s %12.0f\n", "restart with them queued, to first pass (ms)", cost.restart_ms);
  std::printf("%-44s %12.1f\n", "  daemon RSS after the restart (MiB)", cost.rss_restarted_mib);
  std::printf("%-44s %12.2f\n", "pass after undrain (ms)", cost.undrain_ms);
  std::printf("%-44s %12.2f\n", "  of which starting its runs (ms)", cost.undrain_starts_ms);
}

}  // namespace gpuq::bench
