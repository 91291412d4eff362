// SPDX-License-Identifier: Apache-2.0
// `gpuq submit DIR`: the job files of a directory submitted together, each job named after its
// file, as the queues people move from keep one job per file. The job files are DIR's regular
// files named *.sh (hidden ones aside), in name order. Each becomes the request that
// `gpuq submit FILE` makes (its headers, and the flags given before DIR), named after its file
// without ".sh" unless its header names it. They go as one plan (POST /v1/plans): all or
// nothing, and submitting the unchanged directory again leaves their jobs alone ("existing"),
// so re-seeding a queue from its directory queues nothing twice; a changed file is a conflict
// unless --replace. The other files of DIR are named on stderr as not submitted.
// Reads the directory and its files; thread-compatible.
#pragma once

#include <ostream>

#include "cli/commands.h"
#include "cli/context.h"

namespace gpuq::cli {

// Whether the words name a directory (the first word, for a submit that is not a command).
bool is_directory_submit(const SubmitOptions& options);

// The POST /v1/plans request of the directory's job files; what is not submitted goes to `err`.
Outcome<Json> directory_plan_request(const SubmitOptions& options, const Io& io,
                                     std::ostream& err);

}  // namespace gpuq::cli
