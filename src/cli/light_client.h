// SPDX-License-Identifier: Apache-2.0
// The light `gpuq`: the binary people and scripts call. It runs the client commands
// (client_cli.h) itself, over the home's socket, and hands every other line to the full
// binary, `gpuqd` (the daemon, the shim and every other command), by exec: a status or a
// submit then starts in about the time of a plain C program (docs/architecture.md,
// "Three binaries"). It links no curl, no NSS lookup and none of the daemon's code.
// Functions of one thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cli/context.h"

namespace gpuq::cli {

// Whether the light client runs this command line (without the program name) itself: a
// client command and nothing the full binary must do (a help or --version, --url or
// $GPUQ_URL (curl), --token, --mine (NSS)). `url_env` is $GPUQ_URL ("" when unset).
bool light_client_serves(const std::vector<std::string>& args, std::string_view url_env);

// Runs a line light_client_serves() accepted. Returns the exit status.
int run_light_client(const std::vector<std::string>& args, const Io& io);

// Where the full binary may lie, in the order to try, for the light client at `self` (its
// absolute path, /proc/self/exe): beside it (a build tree, bin/ of a tarball laid out flat),
// then ../libexec/gpuq/ (the tarball, the .deb: /usr/bin/gpuq and /usr/libexec/gpuq/gpuqd).
std::vector<std::string> full_binary_candidates(const std::string& self);

// The light client whose full binary is `full` (the inverse of full_binary_candidates: gpuq
// beside a gpuqd, or ../../bin/gpuq for a libexec/gpuq/gpuqd), when that file is executable;
// "" otherwise. What `gpuq service install` writes into the unit: the command people know.
std::string client_binary_for(const std::string& full);

}  // namespace gpuq::cli
