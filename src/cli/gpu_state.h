// SPDX-License-Identifier: Apache-2.0
// How a GPU's state reads in `gpuq status` and `gpuq gpus`: its colour, and one short note
// saying why a GPU that is not simply free or busy cannot take work (who holds it, what is left
// on it, what to do). Pure functions over the daemon's resource JSON (docs/api.md); thread-safe.
#pragma once

#include <string>

#include "cli/daemon_client.h"
#include "cli/table.h"

namespace gpuq::cli {

// The state as a coloured cell: free green, attention red, foreign and cleaning yellow.
Cell gpu_state_cell(const Json& resource);

// "pid 4242 sleep 300 (900 MiB), ...", "run 2 of job 5 left pid 77 …; gpuq release
// --attention gpu1", "preempting job 4 for job 9", or "" when there is nothing to say.
std::string gpu_state_note(const Json& resource);

}  // namespace gpuq::cli
