// The client commands of `gpuq`, one per cmd_*.cc file, each taking its parsed options.
// Argument parsing (CLI11) lives in app.cc and fills these structs; every command checks its
// own values before it contacts the daemon, so a usage error (exit 2) never sends anything.
// Commands print to the Context's streams and return the process exit status.
// Functions of one thread; they own nothing beyond the call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/context.h"

namespace gpuq::cli {

struct SubmitOptions {
  std::string name;
  int gpus = 0;
  std::string priority;          // empty: the daemon's default (normal)
  std::string cwd;               // empty: the current directory
  std::vector<std::string> env;  // KEY=VALUE overrides
  bool json = false;
  std::vector<std::string> words;  // SCRIPT ARGS... or, with command_mode, CMD ARGS...
  bool command_mode = false;       // the words came after `--`
};
// The submit request of docs/api.md, or a usage error (exit 2) saying what is wrong.
// `environ` holds "KEY=VALUE" strings; `cwd` is the absolute current directory.
Outcome<Json> build_submit_request(const SubmitOptions& options,
                                   const std::vector<std::string>& environ, const std::string& cwd);
int run_submit(Context& ctx, const SubmitOptions& options);

struct StatusOptions {
  bool json = false;
  bool all = false;  // every finished job, not only the last kFinishedShown
};
constexpr size_t kFinishedShown = 10;
int run_status(Context& ctx, const StatusOptions& options);

struct ShowOptions {
  std::string ref;
  bool json = false;
};
int run_show(Context& ctx, const ShowOptions& options);

struct LogsOptions {
  std::string ref;
  bool follow = false;
  int run = 0;  // 0: the latest run
};
constexpr Millis kLogPollInterval{250};
int run_logs(Context& ctx, const LogsOptions& options);

struct WaitOptions {
  std::vector<std::string> refs;
  std::string timeout;  // a duration; empty: wait for ever
};
constexpr Millis kWaitPollMax{30'000};  // the longest single long-poll of the event log
int run_wait(Context& ctx, const WaitOptions& options);

struct CancelOptions {
  std::vector<std::string> refs;
};
int run_cancel(Context& ctx, const CancelOptions& options);

struct EventsOptions {
  bool json = false;
  bool follow = false;
  int64_t after = 0;
};
constexpr Millis kEventsFollowWait{30'000};
int run_events(Context& ctx, const EventsOptions& options);

struct GpusOptions {
  bool json = false;
};
int run_gpus(Context& ctx, const GpusOptions& options);

}  // namespace gpuq::cli
