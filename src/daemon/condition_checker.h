// SPDX-License-Identifier: Apache-2.0
// Runs the checks of a job's external conditions — `wait_file` paths, REQUIRES shell tests and
// DONE_IF — on worker threads, so that a slow or hung test never stalls the queue actor. Each
// shell test runs with the job's environment and working directory under `bash -c`, with a
// hard timeout; a test that times out counts as false and says so. Results are posted back to
// the actor's io_context.
// Thread rules: check() is called on the actor thread; callbacks run on the actor thread.
// Owns its worker threads; the destructor stops them (a check in progress is abandoned after
// its own timeout).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/asio.h"
#include "base/duration.h"
#include "os/identity.h"

namespace gpuq::daemon {

struct ConditionRequest {
  int64_t job_id = 0;
  std::string cwd;
  std::map<std::string, std::string> env;
  std::vector<std::string> files;     // must exist (relative to cwd)
  std::vector<std::string> shell_tests;  // REQUIRES: shell tests that must exit 0
  std::string done_if;                // checked when everything else holds; empty: none
  Millis timeout{30'000};             // for each shell test
  // Set: the shell tests run as this user (os::CommandOptions::run_as): the job's submitter,
  // filled in by the World from the stored job.
  std::optional<os::UserIdentity> run_as;
};

struct ConditionResult {
  int64_t job_id = 0;
  bool holds = false;       // every file exists and every REQUIRES exited 0
  bool done = false;        // DONE_IF exited 0 (only checked when `holds`)
  std::string false_text;   // what did not hold: "file results/x.json does not exist", ...
};

class ConditionChecker {
 public:
  ConditionChecker(boost::asio::io_context& actor, int threads);
  ~ConditionChecker();
  ConditionChecker(const ConditionChecker&) = delete;

  void check(ConditionRequest request, std::function<void(ConditionResult)> on_done);

  // Runs one shell test now, on the calling thread: true when it exits 0 within `timeout`.
  // `why` receives a description when it does not.
  static bool run_test(const std::string& shell, const std::string& cwd,
                       const std::map<std::string, std::string>& env, Millis timeout,
                       std::string* why, const std::optional<os::UserIdentity>& run_as = std::nullopt);

 private:
  struct Work {
    ConditionRequest request;
    std::function<void(ConditionResult)> on_done;
  };
  void worker();
  static ConditionResult evaluate(const ConditionRequest& request);

  boost::asio::io_context& actor_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Work> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace gpuq::daemon
