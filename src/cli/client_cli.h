// SPDX-License-Identifier: Apache-2.0
// The commands that scripts call in loops (submit, status, show, logs, wait, cancel, hold,
// release, retry, move, drain, undrain): their options, their grammar (CLI11) and their
// dispatch. The full grammar of `gpuq` (app.cc) defines them through this file, and so does the
// light client (light_client.h), which defines nothing else: the two cannot drift apart.
// Functions of one thread; nothing is kept between calls.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "cli/commands.h"
#include "cli/context.h"

namespace CLI {
class App;
}

namespace gpuq::cli {

// What `gpuq --help` says gpuq is, above the list of commands.
inline constexpr const char* kAppDescription =
    "gpuq: a GPU job queue. Every command talks to the daemon of --home.";

// The help of --json on the commands that act on several jobs or GPUs.
inline constexpr const char* kJsonEach =
    "print the daemon's answers as one JSON array, one element per job (or GPU) in order";

// Every option of the line's global flags and of the client commands; CLI11 writes into it.
struct ClientOptions {
  std::string home;
  std::string url;    // --url: the daemon's HTTP listener instead of its socket
  std::string token;  // --token
  SubmitOptions submit;
  StatusOptions status;
  ShowOptions show;
  LogsOptions logs;
  WaitOptions wait;
  CancelOptions cancel;
  JobRefsOptions hold;
  ReleaseOptions release;
  JobRefsOptions retry;
  MoveOptions move;
  bool drain_json = false;  // drain and undrain
  // The one command with options defined: the line's command word, "" for all (all
  // of them were most of what `gpuq status` cost before it talked to the daemon).
  std::string only_command;
  // Whether every command must at least be listed: a help was asked for (`gpuq --help`,
  // `gpuq -h status`), or no command word was given. Otherwise the other commands are not even
  // created (each is a CLI::App with its own --help: some 100 KiB of heap and its page faults).
  bool lists_all = true;
};

// Whether the command `name` gets its options defined on this line (ClientOptions::only_command).
bool defines(const ClientOptions& options, const std::string& name);

// The command `name` with its --home; nullptr when it gets no options (only_command): then it
// is only listed in `gpuq --help` and known as a command.
CLI::App* add_command(CLI::App& app, ClientOptions& options, const std::string& name,
                      const std::string& description);

// --home, --url and --token, and one command required.
void define_global_options(CLI::App& app, ClientOptions& options);

// submit ... undrain, in the order `gpuq --help` lists them.
void define_client_commands(CLI::App& app, ClientOptions& options);

// Whether `name` is one of the commands define_client_commands() defines.
bool is_client_command(std::string_view name);

// Sorts out what CLI11 left over from `submit`: a `--` before the words (a command, not a
// script), or an unknown option.
Status finish_submit(const CLI::App& submit, SubmitOptions& options);

// Runs the client command `name` (is_client_command) with its parsed options.
int run_client_command(Context& ctx, const std::string& name, const ClientOptions& options);

}  // namespace gpuq::cli
