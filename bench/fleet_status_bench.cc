// SPDX-License-Identifier: Apache-2.0
// How long `gpuq fleet status` takes, and how many requests it makes, with many queued jobs
// (docs/fleet.md, "Cost and speed"): seeds a fleet store with --jobs queued class jobs (spec and
// queue entry each, written directly through the store library, as submits would leave them),
// --running of them claimed by two nodes with fresh heartbeats and 20 recent ends, then runs the
// real binary (`gpuq fleet status --json` plus --args) --runs times and prints the median wall
// time; against moto (the default) also the requests of one run, by kind, as the server counted
// them. --store dir seeds a directory store under --dir instead (no request counts).
// Usage: fleet_status_bench GPUQ_BINARY [--store moto|dir] [--jobs 10000] [--running 8]
//        [--runs 5] [--dir /tmp] [--args "--all"]
// Timings are for comparison between builds on one machine, not assertions.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "fleet/layout.h"
#include "fleet/object_store.h"
#include "s3_server.h"

namespace {

using namespace gpuq;
using Clock = std::chrono::steady_clock;

constexpr int64_t kSubmittedMs = 1'795'949'736'123;
constexpr int kRecentEnds = 20;

struct Options {
  std::string gpuq;
  std::string store = "moto";
  int jobs = 10'000;
  int running = 8;
  int runs = 5;
  std::string dir = "/tmp";
  std::string args;
};

void must(bool ok, const std::string& what) {
  if (ok) return;
  fmt::print(stderr, "fleet_status_bench: {}\n", what);
  std::exit(1);
}

fleet::FleetJob queued_job(int index) {
  fleet::FleetJob job;
  job.id = fleet::new_job_id(kSubmittedMs + index);
  job.name = fmt::format("job-{}", index);
  job.klass = "any";
  job.submitted_ms = kSubmittedMs + index;
  job.submitted_by = "bench@localhost";
  job.spec.name = job.name;
  job.spec.gpus = 1;
  job.spec.script_name = "train.sh";
  job.spec.script_text = "#!/bin/bash\necho training\n";
  return job;
}

void put(fleet::ObjectStore& store, const std::string& key, const std::string& body) {
  auto written = store.put(key, body);
  must(written.has_value(), written ? "" : written.error().message);
}

fleet::Claim claim_of(const fleet::FleetJob& job, const std::string& node, std::string state) {
  fleet::Claim claim;
  claim.job = job.id;
  claim.node = node;
  claim.attempt = 1;
  claim.token = fleet::random_token();
  claim.state = std::move(state);
  claim.runs = 1;
  if (claim.state == fleet::kSucceeded) claim.exit_code = 0;
  return claim;
}

// The fleet as many submits and two busy nodes leave it.
void seed(fleet::ObjectStore& store, const Options& options) {
  std::vector<fleet::Heartbeat> beats(2);
  for (size_t n = 0; n < beats.size(); ++n) {
    beats[n].node = fmt::format("box{}", n + 1);
    beats[n].classes = {"any"};
    for (int g = 0; g < 8; ++g) beats[n].gpus.push_back({fmt::format("gpu{}", g), "H100", 81'559, false});
  }
  for (int i = 0; i < options.jobs; ++i) {
    fleet::FleetJob job = queued_job(i);
    put(store, fleet::keys::spec(job.id), fleet::to_json(job).dump());
    put(store, job.entry(), nlohmann::json{{"id", job.id}}.dump());
    if (i < options.running) {
      fleet::Heartbeat& beat = beats[i % beats.size()];
      put(store, fleet::keys::claim(job.id), fleet::to_json(claim_of(job, beat.node, std::string(fleet::kRunning))).dump());
      beat.running.push_back(job.id);
    }
    if ((i + 1) % 1000 == 0) fmt::print(stderr, "seeded {} jobs\n", i + 1);
  }
  for (int i = 0; i < kRecentEnds; ++i) {
    fleet::FleetJob job = queued_job(options.jobs + i);
    put(store, fleet::keys::spec(job.id), fleet::to_json(job).dump());
    put(store, fleet::keys::claim(job.id), fleet::to_json(claim_of(job, "box1", std::string(fleet::kSucceeded))).dump());
    put(store, fleet::ended_key(kSubmittedMs + options.jobs + i, job.id), nlohmann::json{{"id", job.id}}.dump());
  }
  for (auto& beat : beats) {
    beat.free_gpus = static_cast<int>(beat.gpus.size() - beat.running.size());
    put(store, fleet::keys::heartbeat(beat.node), fleet::to_json(beat).dump());
  }
}

// One `gpuq fleet status --json` through the real binary: its wall time in seconds.
double time_status(const Options& options, const std::string& url, const std::string& environment) {
  std::string command = fmt::format("{} {} fleet status --json --fleet {} {} >/dev/null", environment,
                                    options.gpuq, url, options.args);
  auto start = Clock::now();
  int rc = std::system(command.c_str());
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  must(rc == 0, fmt::format("`{}` failed ({})", command, rc));
  return seconds;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app("gpuq fleet status with many queued jobs");
  app.add_option("gpuq", options.gpuq, "the gpuq binary")->required();
  app.add_option("--store", options.store, "moto (S3 API on loopback) or dir")->check(CLI::IsMember({"moto", "dir"}));
  app.add_option("--jobs", options.jobs, "queued jobs");
  app.add_option("--running", options.running, "of which claimed by a node");
  app.add_option("--runs", options.runs, "timed runs of fleet status");
  app.add_option("--dir", options.dir, "where a dir store (and the scratch home) go");
  app.add_option("--args", options.args, "more arguments of fleet status (e.g. --all)");
  CLI11_PARSE(app, argc, argv);

  std::filesystem::path scratch = std::filesystem::path(options.dir) / fmt::format("fleet-status-bench-{}", ::getpid());
  std::filesystem::create_directories(scratch / "home");
  std::string environment = fmt::format("GPUQ_HOME={}", (scratch / "home").string());
  std::unique_ptr<fleet::testing::S3Server> server;
  std::string url;
  fleet::StoreOptions store_options;
  if (options.store == "moto") {
    auto started = fleet::testing::S3Server::start();
    must(started.has_value(), started ? "" : started.error().message);
    server = std::move(*started);
    url = server->url("bench");
    store_options = server->options();
    environment += fmt::format(" AWS_ENDPOINT_URL={} AWS_REGION={} AWS_ACCESS_KEY_ID={} AWS_SECRET_ACCESS_KEY={}",
                               store_options.endpoint, store_options.region, store_options.access_key_id,
                               store_options.secret_access_key);
  } else {
    std::filesystem::create_directories(scratch / "store");
    url = "dir://" + (scratch / "store").string();
  }
  auto store = fleet::open_store(url, store_options);
  must(store.has_value(), store ? "" : store.error().message);
  auto seeding = Clock::now();
  seed(**store, options);
  fmt::print("seeded {} queued jobs ({} running) and {} ends in {} in {:.1f} s\n", options.jobs, options.running,
             kRecentEnds, url, std::chrono::duration<double>(Clock::now() - seeding).count());

  if (server) must(server->reset_counts().has_value(), "could not reset moto's counts");
  std::vector<double> times = {time_status(options, url, environment)};
  if (server) {
    auto counts = server->counts();
    must(counts.has_value(), "could not read moto's counts");
    fmt::print("requests of one fleet status{}: {} GET, {} LIST, {} PUT, {} other\n",
               options.args.empty() ? "" : " " + options.args, counts->get, counts->list, counts->put,
               counts->remove + counts->head + counts->other);
    // Where the server's time went: the time between one answer and the next, by kind.
    std::map<std::string, double> seconds;
    for (size_t i = 1; i < counts->requests.size(); ++i) {
      seconds[counts->requests[i].kind] += counts->requests[i].time_s - counts->requests[i - 1].time_s;
    }
    // And how much of it the server spent answering (moto's own work): the rest is the client's
    // and the connection's.
    std::map<std::string, double> answering;
    for (const auto& r : counts->requests) answering[r.kind] += r.server_ms / 1000.0;
    for (const auto& [kind, total] : seconds) {
      fmt::print("  {}: {:.3f} s between answers, {:.3f} s of them the server answering\n", kind, total,
                 answering[kind]);
    }
  }
  for (int i = 1; i < options.runs; ++i) times.push_back(time_status(options, url, environment));
  fmt::print("fleet status{} with {} queued jobs: median {:.3f} s of {} runs (min {:.3f}, max {:.3f})\n",
             options.args.empty() ? "" : " " + options.args, options.jobs, median(times), times.size(),
             *std::min_element(times.begin(), times.end()), *std::max_element(times.begin(), times.end()));
  std::filesystem::remove_all(scratch);
  return 0;
}
