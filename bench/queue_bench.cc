// SPDX-License-Identifier: Apache-2.0
// End-to-end benchmark of a real daemon on simulated GPUs:
//   latency     submit-to-start on an idle fake GPU, one job at a time (p50, p99, N jobs):
//               from the client's POST to the moment the client learns of job.started
//               (long-poll), and the daemon's own view (job.started time - job.submitted time);
//               and how long after a run's end its GPU serves again (the cleanup sweep's two
//               empty scans a poll apart), seen by polling GET /v1/gpus;
//   throughput  N trivial jobs (`true`, 1 GPU each) on fake:8, submitted as fast as one
//               client can, until the last one has ended: jobs per second.
//   submits     N submits, one after another, to a drained daemon (nothing starts): each is one
//               durable commit, so this is the cost of committing before answering.
//   queued      with --queued-jobs N: a drained daemon's memory, last scheduling pass and last
//               watchers' look with N jobs queued; then the pass after a hold and a release of
//               one job, after each of --bulk-jobs releases of held jobs, after a cancel that
//               makes --bulk-jobs dependent jobs ready at once, and after undrain; `gpuq
//               status` (its default view) with them queued, and a restart of the daemon with
//               them queued (to its first pass) and its memory after.
//   history     with --finished-jobs N: a store seeded (through the store library, one
//               transaction, before the daemon starts) with N finished jobs, one run and three
//               events each; `gpuq status` through the real binary (p50, p90 of
//               --status-calls calls), GET /v1/status alone, and the daemon's RSS, against the
//               same with an empty store.
//               Run directories are not created: status reads none.
//   sweep       with --array-elements N: one array of N elements (each with this process's
//               environment) queued by one request to a drained daemon: the request's time,
//               the daemon's memory, `gpuq status` after a change and again, GET /v1/arrays,
//               a restart with them queued, and a cancel of the whole array (one request).
//               Past 10,000 elements it raises [sweeps] max_elements to the array's size.
// Results depend on the file system's state (ext4 slows down after many files were created
// and deleted): compare builds by interleaving their runs, not against an old table.
// Usage: queue_bench GPUQ_BINARY [--latency-jobs 200] [--throughput-jobs 2000] [--dir DIR] [--cgroup-root DIR]
//        [--queued-jobs N [--bulk-jobs 1000]] [--finished-jobs N [--status-calls 20]]
//        [--array-elements N]; 0 jobs skips a part.
// Prints a table; timings are for comparison between builds on one machine, not assertions.
#include <CLI/CLI.hpp>

#include "queue_bench_daemon.h"
#include "queue_bench_parts.h"

namespace gpuq::bench {
namespace {

int run(int argc, char** argv) {
  CLI::App app{"gpuq end-to-end benchmark"};
  std::string binary;
  int latency_jobs = 200, throughput_jobs = 2000, submit_jobs = 1000, queued_jobs = 0,
      finished_jobs = 0, status_calls = 20, bulk_jobs = 1000;
  std::string dir = std::filesystem::temp_directory_path().string();
  app.add_option("gpuq", binary, "the gpuq binary")->required();
  app.add_option("--latency-jobs", latency_jobs)->check(CLI::NonNegativeNumber);
  app.add_option("--throughput-jobs", throughput_jobs)->check(CLI::NonNegativeNumber);
  app.add_option("--submit-jobs", submit_jobs, "submits to a drained daemon, one at a time (0: skip)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--finished-jobs", finished_jobs,
                 "also seed a store with this many finished jobs and time `gpuq status` and the "
                 "daemon's memory against an empty store (e.g. 100000)")
      ->check(CLI::NonNegativeNumber);
  // At least one: each status figure is the median of these calls. (CLI11's PositiveNumber
  // refused 0 with "not in range 0.000000 to 1.79e308", which reads as if 0 were allowed.)
  app.add_option("--status-calls", status_calls, "`gpuq status` calls per daemon with --finished-jobs")
      ->check(CLI::Range(1, 1'000'000));
  app.add_option("--queued-jobs", queued_jobs,
                 "also queue this many jobs on a drained fake:64 daemon and report its memory and "
                 "scheduling pass time, settled and after a hold, a release, releases of many "
                 "held jobs, a dependency that makes many ready, and undrain (e.g. 100000)");
  app.add_option("--bulk-jobs", bulk_jobs,
                 "with --queued-jobs: held jobs released one by one, and jobs a cancelled job "
                 "makes ready at once")
      ->check(CLI::NonNegativeNumber);
  int array_elements = 0;
  app.add_option("--array-elements", array_elements,
                 "also queue one array of this many elements with one request (e.g. 10000) and "
                 "report the request's time, the daemon's memory and `gpuq status` with it queued")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--dir", dir, "where the daemons' state directories go")->check(CLI::ExistingDirectory);
  std::string cgroup_root;
  app.add_option("--cgroup-root", cgroup_root,
                 "[cgroup] root for the latency and throughput daemons: runs contained by cgroup v2 "
                 "(docs/containment.md); unset: the daemon's default")
      ->check(CLI::ExistingDirectory);
  CLI11_PARSE(app, argc, argv);
  std::string run_config = cgroup_root.empty() ? "" : fmt::format("[cgroup]\nroot = \"{}\"\n", cgroup_root);

  std::vector<double> client_ms, daemon_ms, free_ms;
  if (latency_jobs > 0) {
    Daemon d(binary, "fake:1", dir, run_config);
    int64_t seq = d.call(gpuq::cli::Method::kGet, "/v1/events?after=0&limit=0")["last_seq"].get<int64_t>();
    for (int i = 0; i < latency_jobs; ++i) {
      auto t0 = Clock::now();
      int64_t id = d.submit();
      int64_t submitted_ms = 0;
      json started = d.wait_event(&seq, [&](const json& e) {
        if (e["job"] == id && e["kind"] == "job.submitted") submitted_ms = e["time_ms"].get<int64_t>();
        return e["job"] == id && e["kind"] == "job.started";
      });
      client_ms.push_back(ms_since(t0));
      daemon_ms.push_back(static_cast<double>(started["time_ms"].get<int64_t>() - submitted_ms));
      d.wait_event(&seq, [&](const json& e) { return e["job"] == id && e["kind"] == "job.succeeded"; });
      // The next job is measured on an idle GPU: wait for this run's cleanup to free it.
      auto ended = Clock::now();
      while (d.call(gpuq::cli::Method::kGet, "/v1/gpus")["resources"][0]["state"] != "free") {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      free_ms.push_back(ms_since(ended));
    }
  }
  double seconds = 0;
  if (throughput_jobs > 0) {
    Daemon d(binary, "fake:8", dir, run_config);
    int64_t seq = d.call(gpuq::cli::Method::kGet, "/v1/events?after=0&limit=0")["last_seq"].get<int64_t>();
    auto t0 = Clock::now();
    for (int i = 0; i < throughput_jobs; ++i) d.submit();
    int finished = 0;
    d.wait_event(&seq, [&](const json& e) {
      std::string kind = e["kind"];
      if (kind == "job.succeeded" || kind == "job.failed") ++finished;
      return finished == throughput_jobs;
    });
    seconds = ms_since(t0) / 1000.0;
  }
  std::vector<double> submit_ms;
  if (submit_jobs > 0) {
    Daemon d(binary, "fake:1", dir);
    d.call(gpuq::cli::Method::kPost, "/v1/drain");  // nothing starts: only the submits' commits
    for (int i = 0; i < submit_jobs; ++i) {
      auto t0 = Clock::now();
      d.submit();
      submit_ms.push_back(ms_since(t0));
    }
  }
  double submit_total_ms = 0;
  for (double ms : submit_ms) submit_total_ms += ms;
  QueuedCost queued;
  if (queued_jobs > 0) queued = measure_queued(binary, dir, queued_jobs, bulk_jobs, status_calls);
  StatusCost empty, history;
  double seed_s = 0;
  if (finished_jobs > 0) {
    {
      Daemon d(binary, "fake:8", dir);
      empty = measure_status(d, status_calls);
    }
    auto seed = [&](const std::string& home) {
      auto t0 = Clock::now();
      seed_history(home, finished_jobs);
      seed_s = ms_since(t0) / 1000.0;
    };
    Daemon d(binary, "fake:8", dir, "", seed);
    history = measure_status(d, status_calls);
  }
  std::printf("%-44s %12s\n", "measure", "value");
  if (latency_jobs > 0) {
    std::printf("%-44s %12.2f\n", "submit-to-start p50, client (ms)", percentile(client_ms, 0.50));
    std::printf("%-44s %12.2f\n", "submit-to-start p99, client (ms)", percentile(client_ms, 0.99));
    std::printf("%-44s %12.0f\n", "submit-to-start p50, daemon clock (ms)", percentile(daemon_ms, 0.50));
    std::printf("%-44s %12.2f\n", "run end to GPU free p50, cleanup (ms)", percentile(free_ms, 0.50));
    std::printf("%-44s %12d\n", "latency jobs", latency_jobs);
  }
  if (throughput_jobs > 0) {
    std::printf("%-44s %12.0f\n", "throughput, trivial jobs on fake:8 (jobs/s)", throughput_jobs / seconds);
    std::printf("%-44s %12d\n", "throughput jobs", throughput_jobs);
    std::printf("%-44s %12.2f\n", "throughput wall time (s)", seconds);
  }
  if (submit_jobs > 0) {
    std::printf("%-44s %12.0f\n", "submits to a drained daemon (submits/s)", submit_jobs / (submit_total_ms / 1000.0));
    std::printf("%-44s %12.2f\n", "submit p50 (ms)", percentile(submit_ms, 0.50));
    std::printf("%-44s %12.2f\n", "submit p99 (ms)", percentile(submit_ms, 0.99));
  }
  if (finished_jobs > 0) {
    double p50_empty = percentile(empty.ms, 0.50), p50 = percentile(history.ms, 0.50);
    std::printf("%-44s %12d\n", "finished jobs in the store (fake:8)", finished_jobs);
    std::printf("%-44s %12.1f\n", "seeding them, one transaction (s)", seed_s);
    std::printf("%-44s %12.1f\n", "gpuq status p50, empty store (ms)", p50_empty);
    std::printf("%-44s %12.1f\n", "gpuq status p90, empty store (ms)", percentile(empty.ms, 0.90));
    std::printf("%-44s %12.1f\n", "gpuq status p50, with them (ms)", p50);
    std::printf("%-44s %12.1f\n", "gpuq status p90, with them (ms)", percentile(history.ms, 0.90));
    std::printf("%-44s %12.2f\n", "  ratio of p50s (with them / empty)", p50 / p50_empty);
    std::printf("%-44s %12.1f\n", "GET /v1/status p50, empty store (ms)", percentile(empty.api_ms, 0.50));
    std::printf("%-44s %12.1f\n", "GET /v1/status p50, with them (ms)", percentile(history.api_ms, 0.50));
    std::printf("%-44s %12.1f\n", "GET /v1/status p90, with them (ms)", percentile(history.api_ms, 0.90));
    std::printf("%-44s %12d\n", "gpuq status calls each", status_calls);
    std::printf("%-44s %12.1f\n", "daemon RSS at start, empty store (MiB)", empty.rss_start);
    std::printf("%-44s %12.1f\n", "daemon RSS at start, with them (MiB)", history.rss_start);
    std::printf("%-44s %12.1f\n", "  difference (MiB)", history.rss_start - empty.rss_start);
    std::printf("%-44s %12.1f\n", "daemon RSS after the calls, empty (MiB)", empty.rss_after);
    std::printf("%-44s %12.1f\n", "daemon RSS after the calls, with them (MiB)", history.rss_after);
    std::printf("%-44s %12.1f\n", "  difference (MiB)", history.rss_after - empty.rss_after);
  }
  if (queued_jobs > 0) print_queued(queued, queued_jobs, bulk_jobs);
  if (array_elements > 0) print_sweep(measure_sweep(binary, dir, array_elements, status_calls), array_elements);
  return 0;
}

}  // namespace
}  // namespace gpuq::bench

int main(int argc, char** argv) { return gpuq::bench::run(argc, argv); }
