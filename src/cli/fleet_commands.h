// SPDX-License-Identifier: Apache-2.0
// `gpuq fleet ...` (docs/fleet.md, "Commands"): the fleet's client commands. They talk to the
// fleet's object store (fleet/client.h), not to a daemon. Each command first checks its own
// values (a usage error, exit 2, touches nothing), then resolves the store (--fleet, else
// $GPUQ_FLEET), opens it through Io::open_fleet (tests pass an in-memory store) and runs.
// Exit statuses: 0 ok; 1 refused (not found, a name's conflict, a job that already ended); 2 a
// usage error; 3 the store could not be reached.
// Functions of one thread; they own nothing beyond the call (the store is opened per command).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/context.h"
#include "config/config.h"
#include "fleet/layout.h"
#include "fleet/object_store.h"

namespace CLI {
class App;
}

namespace gpuq::cli {

struct FleetSubmitOptions {
  std::string klass;                // --class; "any" when neither --class nor --node
  std::string node;                 // --node: pinned
  std::string name;                 // --name; several files are NAME-1, NAME-2, ...
  std::optional<int> gpus;
  std::string priority;
  std::vector<std::string> after;   // fleet job names or ids (afterok); replace after= headers
  bool chain = false;               // with --node: each file after the one before
  std::vector<std::string> env;     // KEY=VALUE: the only environment that travels
  std::vector<std::string> files;   // scripts; none with --step
  // One job of steps (docs/jobs.md, "Steps"): each --step TEXT in order, instead of the files.
  std::vector<std::string> steps;
  // Containers, replacing the scripts' image=, pull=, container-user= (docs/jobs.md).
  std::optional<std::string> image;
  std::optional<std::string> pull;
  std::optional<std::string> container_user;
  // A sweep (docs/sweeps.md), replacing the scripts' `#gpuq array=`/`grid=`: one fleet job per
  // element, NAME.INDEX; no %MAX (nothing counts an array's running elements across nodes).
  std::optional<std::string> array;
  std::vector<std::string> grid;
};

struct FleetStatusOptions {
  bool all = false;                   // --all: every queue entry
  std::optional<size_t> limit;        // --limit N: the best N waiting entries (0: every one)
};

struct FleetLogsOptions {
  std::string ref;
  int attempt = 0;  // 0: the claim's current attempt
  bool follow = false;
};

// `fleet push FILE PATH`, `fleet pull PATH FILE`: PATH is relative to a node's workdir, as a
// `# gpuq-in:`/`# gpuq-out:` path, and lives under the data store's prefix.
struct FleetDataOptions {
  std::string file;
  std::string path;
};

// What the command line chose: the subcommand and its values.
struct FleetParsed {
  std::string command;  // status, submit, show, logs, cancel, drain, undrain, move
  std::string fleet;    // --fleet; empty: $GPUQ_FLEET
  std::string home;     // --home: whose config.toml's [fleet] applies; empty: the default home
  bool json = false;
  FleetSubmitOptions submit;
  FleetLogsOptions logs;
  FleetDataOptions data;  // push, pull
  FleetStatusOptions status;
  std::string ref;      // show, cancel
  std::string node;     // drain, undrain
  std::string from;     // move
  std::string to;
};

// Adds `gpuq fleet` and its subcommands to the command line; they fill `parsed`. Without
// options (a line that runs another command), only `fleet` itself, for `gpuq --help`.
void define_fleet_command(CLI::App& app, FleetParsed& parsed, bool with_options = true);
// Runs a parsed `gpuq fleet` command line; returns the exit status.
int run_fleet(const Io& io, const FleetParsed& parsed);

// The store's URL: --fleet, else GPUQ_FLEET of `environ`, else [fleet] url of config.toml
// (`configured`); a usage error naming the three otherwise.
Outcome<std::string> fleet_url(const std::string& flag, const std::vector<std::string>& environ,
                               const std::string& configured = "");
// The settings a fleet store is opened with, by the CLI and the daemon alike: [fleet] of
// config.toml first, then the AWS_* variables for what it leaves unset.
fleet::StoreOptions fleet_store_options(const config::FleetConfig& configured);
// Opens the store of `url` with fleet_store_options(): what Io::open_fleet does by default.
Result<std::unique_ptr<fleet::ObjectStore>> open_fleet_store(const std::string& url,
                                                             const config::FleetConfig& configured);

// The fleet jobs of `gpuq fleet submit` (ids new, chain dependencies not yet added: they name
// the jobs as submitted), each from its script and `#gpuq` headers with the flags applied, as
// `gpuq submit` reads a script; `now_ms` is the submission time. A usage error says what is wrong.
Outcome<std::vector<fleet::FleetJob>> build_fleet_jobs(const FleetSubmitOptions& options,
                                                       const Io& io, int64_t now_ms);

// The commands, over an open store.
int run_fleet_submit(Context& ctx, fleet::ObjectStore& store, const FleetSubmitOptions& options,
                     bool json);
int run_fleet_status(Context& ctx, fleet::ObjectStore& store, const FleetStatusOptions& options,
                     bool json);
int run_fleet_show(Context& ctx, fleet::ObjectStore& store, const std::string& ref, bool json);
int run_fleet_logs(Context& ctx, fleet::ObjectStore& store, const FleetLogsOptions& options,
                   bool json);
int run_fleet_cancel(Context& ctx, fleet::ObjectStore& store, const std::string& ref, bool json);
int run_fleet_drain(Context& ctx, fleet::ObjectStore& store, const std::string& node, bool on,
                    bool json);
int run_fleet_move(Context& ctx, fleet::ObjectStore& store, const std::string& from,
                   const std::string& to, bool json);

// push (`push` true) or pull one file of the data store, whose keys begin with `data_prefix`.
int run_fleet_move_data(Context& ctx, fleet::ObjectStore& data, const std::string& data_prefix,
                        const FleetDataOptions& options, bool push, bool json);

// `gpuq fleet logs -f` reads the log and the claim this often.
constexpr Millis kFleetLogPoll{1'000};

// Reports a fleet error ("gpuq: <message>") and returns its exit status: 2 for a refused
// value, 3 for an unreachable store, else 1.
int report_fleet_error(Context& ctx, const Error& error);

}  // namespace gpuq::cli
