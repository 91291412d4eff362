// SPDX-License-Identifier: Apache-2.0
// Fleet nodes for the fleet's end-to-end tests: real `gpuq daemon --fleet` processes (the
// binary GPUQ_BINARY), each with its own temporary home and [fleet] workdir, joined to a store
// on an S3Server, driven through the real CLI; and `gpuq fleet` run as from a machine with no
// daemon of its own (only --fleet and the AWS_* variables).
//
//   FleetDaemon a(root + "/a", {.node = "a", .classes = {"x"}, .url = url, .store = options});
//   ASSERT_TRUE(a.start()) << ...;
//   a.kill();  // SIGKILL the daemon, its shims and its runs, as a dead machine
//
// Each daemon carries a marker variable (GPUQ_E2E_NODE=HOME) that its spawner and shims inherit,
// and its runs carry GPUQ_RUN_DIR=HOME/...: kill() and the destructor find every process of the
// node by them in /proc, so a failing test leaves none behind. The destructor stops the daemon
// (SIGTERM), kills what is left and removes the node's directory (kept with
// GPUQ_KEEP_TEST_DIRS set, to read its daemon.log).
// Thread rules: one test thread per FleetDaemon.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "fleet/object_store.h"

namespace gpuq::fleet::testing {

struct CliOutput {
  int status = -1;
  std::string out;
  std::string err;
};

// Polls `predicate` every 20 ms until it holds or `timeout_ms` passes; whether it held.
bool wait_until(const std::function<bool()>& predicate, int timeout_ms = 30'000);
// Whether `pid` exists and is not a zombie.
bool process_alive(int pid);
// The pid written in `file` (a job's "echo $$ > FILE"); 0 while there is none.
int read_pid(const std::string& file);
// The lines of a text file (none when it is missing).
std::vector<std::string> read_lines(const std::string& file);

struct FleetDaemonOptions {
  std::string node;
  std::vector<std::string> classes;
  std::string url;               // s3://BUCKET/PREFIX
  StoreOptions store;            // endpoint and credentials (S3Server::options, maybe via a proxy)
  std::string gpus = "fake:2";
  // Short timings ([fleet] poll 200ms, heartbeat 500ms, lease 3s, sync_every 500ms, timeout
  // 1s), or none at all: the defaults.
  bool short_timings = true;
  // The lease of the short timings. 3 s lets a test see a claim lapse soon; a test that proves
  // something else (who ran what, and once) takes a longer one: on a loaded 2-core machine a
  // node can miss every renewal of a 3 s lease (moto starved, 1 s request timeout), and its
  // claims then lapse before their jobs start, as they should.
  std::string lease = "3s";
  // More lines for the [fleet] table of its config.toml ("part_size = \"5MiB\"\n").
  std::string fleet_config;
};

class FleetDaemon {
 public:
  // `dir` (created) holds the node's home and workdir.
  FleetDaemon(std::string dir, FleetDaemonOptions options);
  ~FleetDaemon();
  FleetDaemon(const FleetDaemon&) = delete;
  FleetDaemon& operator=(const FleetDaemon&) = delete;

  // Writes config.toml and starts `gpuq daemon --detach --fleet URL --node N [--classes ...]`;
  // an error carries what it printed.
  Status start();
  // SIGTERM, and waits for the daemon to exit (its runs keep going).
  void stop();
  // SIGKILL for the daemon, its spawner and shims, and its runs; returns once all are gone.
  void kill();
  int pid() const;  // the daemon's, 0 when none runs

  // `gpuq --home HOME ARGS...`.
  CliOutput gpuq(const std::vector<std::string>& args) const;
  // `gpuq --home HOME events --json`, oldest first (none when the daemon does not answer).
  std::vector<nlohmann::json> events() const;
  // The first event of `kind` whose data has `field` == `value`.
  std::optional<nlohmann::json> event(const std::string& kind, const std::string& field,
                                      const std::string& value) const;
  // Live processes of this node's runs (GPUQ_RUN_DIR under its home).
  std::vector<int> run_processes() const;

  const std::string& node() const { return options_.node; }
  const std::string& home() const { return home_; }
  const std::string& work() const { return work_; }  // its [fleet] workdir

 private:
  std::vector<int> processes() const;  // daemon, spawner, shims and runs

  std::string dir_;
  std::string home_;
  std::string work_;
  FleetDaemonOptions options_;
};

// `gpuq fleet ARGS... --fleet URL` with nothing but the AWS_* variables for `store` (and
// GPUQ_HOME at `scratch_home`, an empty directory, so no config.toml is read): another machine.
CliOutput fleet_cli(const std::string& scratch_home, const std::string& url, const StoreOptions& store,
                    std::vector<std::string> args);

}  // namespace gpuq::fleet::testing
