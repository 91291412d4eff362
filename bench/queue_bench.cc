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
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/time.h"
#include "cli/curl_transport.h"
#include "model/job.h"
#include "os/command.h"
#include "store/store.h"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

// Whether `pid` has exited and waits for its parent (init, for a detached daemon) to reap it.
bool zombie(int pid) {
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string text(std::istreambuf_iterator<char>(stat), {});
  auto paren = text.rfind(')');
  return paren == std::string::npos || paren + 2 >= text.size() || text[paren + 2] == 'Z';
}

struct Daemon {
  std::string binary, gpus, home;
  std::unique_ptr<gpuq::cli::Transport> http;

  // `prepare` runs on the fresh state directory before the daemon starts (seeding its store).
  Daemon(std::string bin, const std::string& gpus_, const std::string& dir,
         const std::string& config = "",
         const std::function<void(const std::string& home)>& prepare = {})
      : binary(std::move(bin)), gpus(gpus_) {
    home = (std::filesystem::path(dir) / fmt::format("gpuq-bench-{}-{}", getpid(), gpus)).string();
    std::filesystem::remove_all(home);
    std::filesystem::create_directories(home);
    if (!config.empty()) std::ofstream(home + "/config.toml") << config;
    if (prepare) prepare(home);
    start();
  }
  ~Daemon() {
    stop();
    std::error_code ignored;
    std::filesystem::remove_all(home, ignored);
  }
  // Starts the daemon on `home` (returns once `gpuq daemon --detach` has: the daemon serves).
  void start() {
    auto r = gpuq::os::run_command({binary, "--home", home, "daemon", "--gpus", gpus, "--detach", "--http", "off"},
                                   gpuq::Millis(600'000));
    if (!r || r->exit_code != 0) {
      std::fprintf(stderr, "cannot start the daemon: %s\n", r ? r->err.c_str() : r.error().message.c_str());
      std::exit(1);
    }
    http = std::move(*gpuq::cli::CurlTransport::create(home + "/gpuq.sock"));
  }
  // SIGTERM, then until it has exited (a daemon with a deep queue takes a while): it removes
  // files of its home as it stops.
  void stop() {
    std::ifstream lock(home + "/daemon.lock");
    std::string text(std::istreambuf_iterator<char>(lock), {});
    if (text.empty()) return;
    int pid = std::stoi(text);
    ::kill(pid, SIGTERM);
    for (int i = 0; i < 3000 && ::kill(pid, 0) == 0 && !zombie(pid); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  // Ends the benchmark after a failure without leaving the daemon running (std::exit runs
  // no destructor of a local).
  [[noreturn]] void fail() {
    stop();
    std::error_code ignored;
    std::filesystem::remove_all(home, ignored);
    std::exit(1);
  }
  // Stops the daemon and starts it again on the same home: milliseconds from the start until
  // its first scheduling pass has run (GET /v1/health shows one).
  double restart() {
    stop();
    auto t0 = std::chrono::steady_clock::now();
    start();
    while (call(gpuq::cli::Method::kGet, "/v1/health", "", 600'000).value("pass", 0) < 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  json call(gpuq::cli::Method method, const std::string& target, const std::string& body = "",
            int timeout_ms = 30'000) {
    gpuq::cli::HttpRequest request{method, target, body, gpuq::Millis(timeout_ms)};
    auto response = http->send(request);
    if (!response || response->status >= 300) {
      std::fprintf(stderr, "request %s failed: %s\n", target.c_str(),
                   response ? response->body.c_str() : response.error().message.c_str());
      fail();
    }
    return json::parse(response->body);
  }
  int64_t submit() {
    static const std::string body =
        json{{"argv", {"true"}}, {"gpus", 1}, {"cwd", "/tmp"}, {"env", {{"PATH", "/usr/bin:/bin"}}}}.dump();
    return call(gpuq::cli::Method::kPost, "/v1/jobs", body)["id"].get<int64_t>();
  }
  // Long-polls events after `*seq` until `done(event)` returns true for one; returns it.
  json wait_event(int64_t* seq, const std::function<bool(const json&)>& done) {
    while (true) {
      json page = call(gpuq::cli::Method::kGet, fmt::format("/v1/events?after={}&wait_ms=10000", *seq), "", 20'000);
      for (const auto& e : page["events"]) {
        *seq = e["seq"].get<int64_t>();
        if (done(e)) return e;
      }
    }
  }

  int pid() { return call(gpuq::cli::Method::kGet, "/v1/health")["pid"].get<int>(); }
};

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The resident memory of process `pid` (MiB).
double rss_mib(int pid) {
  std::ifstream proc(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(proc, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return 0;
}

// `count` finished jobs as a user's history holds them: a script-like command, a login
// environment (~2 KiB), one run and submitted/started/ended events each; one in ten failed.
// They finished one a minute, up to now.
void seed_history(const std::string& home, int count) {
  auto store = gpuq::store::Store::open(home + "/gpuq.db", false);
  if (!store) {
    std::fprintf(stderr, "cannot open the store: %s\n", store.error().message.c_str());
    std::exit(1);
  }
  gpuq::Job job;
  job.spec.cwd = "/home/me/experiments/llm-eval";
  job.spec.argv = {"python", "eval.py", "--model", "ckpt/step-12000", "--tasks", "mbpp,humaneval"};
  job.spec.gpus = 1;
  job.spec.estimate_ms = 3'600'000;
  for (int i = 0; i < 40; ++i) {
    job.spec.env[fmt::format("VAR_{:02}", i)] = std::string(40, static_cast<char>('a' + i % 26));
  }
  job.spec.env["PATH"] = "/home/me/.local/bin:/opt/conda/bin:/usr/local/bin:/usr/bin:/bin";
  int64_t now = gpuq::wall_now_ms();
  auto seeded = (*store)->transaction([&]() -> gpuq::Status {
    for (int i = 0; i < count; ++i) {
      bool failed = i % 10 == 9;
      int64_t ended = now - static_cast<int64_t>(count - i) * 60'000;
      job.spec.name = fmt::format("eval-{}", i);
      job.state = failed ? gpuq::JobState::kFailed : gpuq::JobState::kSucceeded;
      job.submitted_at_ms = ended - 3'700'000;
      job.finished_at_ms = ended;
      job.reason = failed ? "exit code 1" : "";
      job.queue_order = i + 1;
      auto id = (*store)->insert_job(job);
      if (!id) return tl::unexpected(id.error());
      gpuq::Run run;
      run.job_id = *id;
      run.number = 1;
      run.gpus = {fmt::format("gpu{}", i % 8)};
      run.gpu_indices = {i % 8};
      run.shim_pid = 100'000 + i;
      run.started_at_ms = ended - 3'600'000;
      run.run_dir = fmt::format("{}/jobs/{}/run-1", home, *id);
      run.run_id = fmt::format("{}-1-{:08x}", *id, i);
      auto run_id = (*store)->insert_run(run, job.spec.name);
      if (!run_id) return tl::unexpected(run_id.error());
      auto st = (*store)->finish_run(*run_id, ended, failed ? 1 : 0, std::nullopt,
                                failed ? gpuq::RunOutcome::kFailed : gpuq::RunOutcome::kSucceeded);
      if (st) st = (*store)->set_cleanup(*run_id, gpuq::store::CleanupState::kDone);
      if (!st) return st;
      gpuq::Event e;
      e.job = *id;
      e.time_ms = job.submitted_at_ms;
      e.kind = "job.submitted";
      e.data = {{"name", job.spec.name}, {"gpus", 1}, {"priority", 50}};
      if (auto seq = (*store)->append_event(e); !seq) return tl::unexpected(seq.error());
      e.run = 1;
      e.time_ms = run.started_at_ms;
      e.kind = "job.started";
      e.data = {{"gpus", run.gpu_indices}, {"pid", run.shim_pid}, {"run_dir", run.run_dir}};
      if (auto seq = (*store)->append_event(e); !seq) return tl::unexpected(seq.error());
      e.time_ms = ended;
      e.kind = failed ? "job.failed" : "job.succeeded";
      e.data = {{"exit_code", failed ? 1 : 0}, {"duration_ms", 3'600'000}, {"outcome", e.kind.substr(4)}};
      if (auto seq = (*store)->append_event(e); !seq) return tl::unexpected(seq.error());
    }
    return gpuq::ok();
  });
  if (!seeded) {
    std::fprintf(stderr, "cannot seed the store: %s\n", seeded.error().message.c_str());
    std::exit(1);
  }
}

// What `gpuq status` costs against one daemon (the whole command, and the daemon's answer to
// GET /v1/status alone, without starting a process), and the daemon's memory before and after.
struct StatusCost {
  std::vector<double> ms, api_ms;
  double rss_start = 0, rss_after = 0;
};

StatusCost measure_status(Daemon& d, int calls) {
  StatusCost cost;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // let the daemon settle
  int pid = d.pid();
  cost.rss_start = rss_mib(pid);
  for (int i = 0; i < calls; ++i) {
    auto t0 = Clock::now();
    auto r = gpuq::os::run_command({d.binary, "--home", d.home, "status"}, gpuq::Millis(120'000));
    cost.ms.push_back(ms_since(t0));
    if (!r || r->exit_code != 0) {
      std::fprintf(stderr, "gpuq status failed: %s\n", r ? r->err.c_str() : r.error().message.c_str());
      d.fail();
    }
  }
  for (int i = 0; i < calls; ++i) {
    auto t0 = Clock::now();
    d.call(gpuq::cli::Method::kGet, "/v1/status", "", 120'000);
    cost.api_ms.push_back(ms_since(t0));
  }
  cost.rss_after = rss_mib(pid);
  return cost;
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t index = std::min(values.size() - 1, static_cast<size_t>(p * (values.size() - 1) + 0.5));
  return values[index];
}


// The queued part: a drained fake:64 daemon with `count` ready jobs, `bulk` held ones, and
// `bulk` more that wait for a held "gate" job; its memory, its watchers' look, and the
// scheduling pass after each kind of change (the pass that follows the change, read from
// /v1/health's pass counter).
struct QueuedCost {
  double rss_mib = 0, settled_ms = 0, look_ms = 0;
  double hold_ms = 0, release_ms = 0;    // of one job, the head of the queue
  std::vector<double> bulk_release_ms;  // the held jobs released one by one
  double dependency_ms = 0;             // the gate cancelled: its waiting jobs are ready
  double undrain_ms = 0;                // the first pass that starts jobs
  double undrain_starts_ms = 0;         // of it, starting them
  std::vector<double> status_ms;        // `gpuq status` (the default view) with them queued
  double restart_ms = 0, rss_restarted_mib = 0;  // the daemon started again with them queued
};

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

double run_status(Daemon& d);

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
  std::printf("%-44s %12.0f\n", "restart with them queued, to first pass (ms)", cost.restart_ms);
  std::printf("%-44s %12.1f\n", "  daemon RSS after the restart (MiB)", cost.rss_restarted_mib);
  std::printf("%-44s %12.2f\n", "pass after undrain (ms)", cost.undrain_ms);
  std::printf("%-44s %12.2f\n", "  of which starting its runs (ms)", cost.undrain_starts_ms);
}

// The sweep part: one array of `count` elements queued by one request to a drained fake:8
// daemon, each element with this process's environment (as the CLI sends its own), and what
// it costs: the request, the daemon's memory, `gpuq status` (one line for the array) right
// after a change to the queue and when nothing changed, and GET /v1/arrays/NAME.
struct SweepCost {
  double submit_ms = 0, rss_before = 0, rss_after = 0, array_ms = 0;
  std::vector<double> status_after_change_ms, status_ms;
  std::vector<double> mixed_after_change_ms;  // with one more job waiting behind the array
  double restart_ms = 0, rss_restarted = 0;   // the daemon started again with them queued
  double cancel_ms = 0;                       // POST /v1/arrays/NAME/cancel of every element
};

double run_status(Daemon& d) {
  auto t0 = Clock::now();
  auto r = gpuq::os::run_command({d.binary, "--home", d.home, "status"}, gpuq::Millis(120'000));
  double ms = ms_since(t0);
  if (!r || r->exit_code != 0) {
    std::fprintf(stderr, "gpuq status failed: %s\n", r ? r->err.c_str() : r.error().message.c_str());
    d.fail();
  }
  return ms;
}

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
  d.call(Method::kPost, "/v1/arrays/sweep/cancel", "", 600'000);
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
  std::printf("%-44s %12.0f\n", "  cancel of the whole array (ms)", cost.cancel_ms);
}

}  // namespace

int main(int argc, char** argv) {
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
  app.add_option("--status-calls", status_calls, "`gpuq status` calls per daemon with --finished-jobs")
      ->check(CLI::PositiveNumber);
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
