// SPDX-License-Identifier: Apache-2.0
// queue_bench's daemon (queue_bench.cc lists the parts): one real daemon on fake GPUs under a
// fresh home, started detached, spoken to over its unix socket, stopped and removed when it
// goes out of scope; and what every part measures with: timers, a process's resident memory,
// percentiles, `gpuq status` as a whole command.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/time.h"
#include "cli/curl_transport.h"
#include "os/command.h"

namespace gpuq::bench {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

// Whether `pid` has exited and waits for its parent (init, for a detached daemon) to reap it.
inline bool zombie(int pid) {
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

inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The resident memory of process `pid` (MiB).
inline double rss_mib(int pid) {
  std::ifstream proc(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(proc, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return 0;
}

inline double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t index = std::min(values.size() - 1, static_cast<size_t>(p * (values.size() - 1) + 0.5));
  return values[index];
}

// The whole `gpuq status` command against `d` (its default view): milliseconds.
inline double run_status(Daemon& d, const std::vector<std::string>& options = {}) {
  std::vector<std::string> argv = {d.binary, "--home", d.home, "status"};
  argv.insert(argv.end(), options.begin(), options.end());
  auto t0 = Clock::now();
  auto r = gpuq::os::run_command(argv, gpuq::Millis(120'000));
  double ms = ms_since(t0);
  if (!r || r->exit_code != 0) {
    std::fprintf(stderr, "gpuq status failed: %s\n", r ? r->err.c_str() : r.error().message.c_str());
    d.fail();
  }
  return ms;
}

}  // namespace gpuq::bench
