// SPDX-License-Identifier: Apache-2.0
// The flags of `gpuq submit` that describe the job beyond its name, size and environment:
// its steps and container (docs/jobs.md, "Steps", "Containers") and its scheduling (docs/api.md,
// "Scheduling"), each recorded in SubmitOptions only when given, so that a script's `#gpuq`
// headers apply otherwise. Kept apart from app.cc, the rest of the command line.
// Functions of one thread; the options must outlive the parse.
#pragma once

#include "cli/commands.h"

namespace gpuq::cli {

// Adds the flags to `submit`, writing into `options`.
void define_submit_job_flags(CLI::App* submit, SubmitOptions& options);

}  // namespace gpuq::cli
