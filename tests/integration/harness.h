// A real gpuq daemon in a temporary state directory, driven through the real `gpuq` binary,
// for end-to-end tests: start, stop, SIGKILL, restart, run CLI commands and read their JSON.
// The destructor stops the daemon and kills every run it left behind, so a failing test leaves
// no process running; it removes the state directory too, unless GPUQ_KEEP_TEST_DIRS is set
// (to read a failed test's daemon.log). One Harness per test; not thread-safe.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "os/command.h"

namespace gpuq::testing {

struct CliResult {
  int status = -1;
  std::string out;
  std::string err;
};

// Polls `predicate` every 20 ms until it holds or `timeout_ms` passes; returns whether it held.
bool wait_until(const std::function<bool()>& predicate, int timeout_ms = 30'000);

class Harness {
 public:
  explicit Harness(std::string gpus = "fake:2");
  ~Harness();

  // Starts the daemon (gpuq daemon --detach); fails the test when it does not start.
  void start();
  // SIGTERM and wait for the daemon to exit (runs keep going).
  void stop();
  // SIGKILL the daemon, as a crash or OOM kill would.
  void kill_daemon();
  int daemon_pid() const;

  // Runs `gpuq --home HOME args...` in the work directory.
  CliResult gpuq(const std::vector<std::string>& args, int timeout_ms = 60'000) const;
  // Runs a command that prints JSON and parses it (test fails on a bad status or bad JSON).
  nlohmann::json gpuq_json(const std::vector<std::string>& args) const;
  // Submits `-- sh -c SCRIPT` with extra flags; returns the new job id.
  int64_t submit_sh(const std::string& script, const std::vector<std::string>& flags = {}) const;
  // `gpuq show ID --json`.
  nlohmann::json show(int64_t id) const;
  nlohmann::json show_ref(const std::string& ref) const;  // by id or name
  // Waits until `predicate(show(id))` holds or `timeout_ms` passes; returns whether it held.
  bool wait_for(int64_t id, const std::function<bool(const nlohmann::json&)>& predicate,
                int timeout_ms = 30'000) const;
  // Every event, oldest first.
  std::vector<nlohmann::json> events() const;

  const std::string& home() const { return home_; }
  const std::string& work() const { return work_; }  // a scratch directory for job files
  std::string path(const std::string& name) const { return work_ + "/" + name; }
  void touch(const std::string& name) const;

 private:
  std::string gpus_;
  std::string home_;
  std::string work_;
  std::string root_;
};

}  // namespace gpuq::testing
