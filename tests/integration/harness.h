// SPDX-License-Identifier: Apache-2.0
// A real gpuq daemon in a temporary state directory, driven through the real `gpuq` binary,
// for end-to-end tests: start, stop, SIGKILL, restart, run CLI commands and read their JSON.
// The destructor stops the daemon and kills every run it left behind, so a failing test leaves
// no process running; it removes the state directory too, unless GPUQ_KEEP_TEST_DIRS is set
// (to read a failed test's daemon.log). One Harness per test; not thread-safe.
//
// To check that something does NOT happen, never sleep and look: drive the daemon to a known
// point and check exactly. wait_passes(2) waits for two scheduling passes that have seen every
// change made before the call; other known points are events, `gpuq wait`, files jobs write.
#pragma once

#include <cstdlib>
#include <functional>
#include <optional>
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

// Sets an environment variable for the daemons this test starts, and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Whether process `pid` exists and is not a zombie (a zombie has ended; it waits to be reaped).
bool process_alive(int pid);

class Harness {
 public:
  explicit Harness(std::string gpus = "fake:2");
  ~Harness();

  // Starts the daemon (gpuq daemon --detach, with `flags`); fails the test when it does not
  // start. No TCP listener unless a test asks for one: parallel test daemons would fight over
  // the default port.
  void start(const std::vector<std::string>& flags = {"--http", "off"});
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

  // GET /v1/health's body: among others "pass" and the daemon's clock "now_ms" (the clock its
  // deadlines and windows are measured on). The test fails when the daemon does not answer.
  nlohmann::json health() const;
  // How many scheduling passes the daemon has completed since it started; -1 when it does not
  // answer. A pass numbered above the count read after a change has seen that change.
  int64_t pass() const;
  // Waits until the daemon has completed `n` more scheduling passes than when called, so each
  // of them has seen every change the daemon had accepted before the call (a submit, a
  // control, a cancel); the test fails when they do not come within 60 s. Passes are requested,
  // never polled (an idle daemon does none), so each missing one is asked for by submitting a
  // held job named "pass-nudge-N" (a new name each time: a job submitted again under its name
  // is the same job, and asks for no pass). It never runs, takes no GPU or lane and is not in
  // the scheduler's queue, but it is a job (in `gpuq status`) with a job.submitted event.
  void wait_passes(int n = 2) const;

  // Live processes (zombies excepted) of run `run` of job `job`: the job's command and its
  // children, which carry that run's GPUQ_RUN_DIR in their environment (the shim does not).
  std::vector<int> run_processes(int64_t job, int run) const;

  const std::string& home() const { return home_; }
  const std::string& work() const { return work_; }  // a scratch directory for job files
  std::string path(const std::string& name) const { return work_ + "/" + name; }
  void touch(const std::string& name) const;

 private:
  std::string gpus_;
  std::string home_;
  std::string work_;
  std::string root_;
  mutable int nudges_ = 0;  // held jobs wait_passes submitted
};

}  // namespace gpuq::testing
