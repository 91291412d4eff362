// SPDX-License-Identifier: Apache-2.0
// `gpuq submit --step TEXT` (docs/jobs.md, "Steps"): each TEXT becomes one step of the submit
// request's "steps", in order. TEXT is split into words as a shell quotes them, but nothing is
// expanded, and shell syntax that a step would not interpret (pipes, redirections, $VAR, ...) is
// refused (spec/shell_words.h). A first word that names a file makes a script step: the script is
// read, checked and snapshotted as a job's script is (spec/script.h), its `#gpuq` headers set the
// step's name, timeout, done-if and image (spec/headers.h, ScriptRole::kStep), and the other words
// are its arguments. Any other first word makes a command step, run as given.
// Reads the scripts it names (relative paths from the current directory, as a job's script);
// functions of one thread.
#pragma once

#include <string>
#include <vector>

#include "cli/daemon_client.h"

namespace gpuq::cli {

// The "steps" of a submit request; a usage error (exit 2) names the step's flag and text and
// says how to fix it, or, for a script's header, the script's file:line.
Outcome<Json> steps_request(const std::vector<std::string>& texts);

}  // namespace gpuq::cli
