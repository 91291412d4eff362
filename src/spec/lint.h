// SPDX-License-Identifier: Apache-2.0
// `gpuq lint`: every finding about job scripts and plan files before anything is queued, so a
// bad job is fixed at the desk, not discovered by a queue gone quiet (DESIGN.md §6). A `.json`
// file is a plan (checked with check_plan, plus the scripts its jobs and steps name); anything
// else is a script (empty/binary text, header errors, `bash -n` syntax). A done-if test of a
// container job or step is a warning: it runs on the host, not in the image.
// Reads the named files and runs `bash -n` (through os::run_command, with a timeout); holds no
// state; thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "spec/diagnostic.h"
#include "spec/headers.h"

namespace gpuq::spec {

struct LintOptions {
  int machine_gpus = -1;  // GPUs on the machine that will run the jobs; -1 when unknown
  size_t max_sweep_elements = 0;  // the daemon's [sweeps] max_elements; 0 when unknown
  std::map<std::string, std::string> shell = {};  // what ~ and $NAME in plans expand from (plan.h)
};

// All findings about `paths`, sorted by file and line; empty when everything is clean.
std::vector<Diagnostic> lint_files(const std::vector<std::string>& paths,
                                   const LintOptions& options);

// The findings about one script file, as a job's script or as a step's (plans lint the scripts
// they name in their role). A done-if in a container (image=) is a warning: it runs on the host.
std::vector<Diagnostic> lint_script(const std::string& path, const LintOptions& options,
                                    ScriptRole role = ScriptRole::kJob);

// Paths that a REQUIRES test waits for: the PATH of each `test -e/-f/-s/-d/-r PATH` or
// `[ -f PATH ]` in `command` (not negated, without shell expansions). Other tests are opaque.
std::vector<std::string> paths_tested_by(const std::string& command);

}  // namespace gpuq::spec
