// SPDX-License-Identifier: Apache-2.0
// The elements of a job array or grid as job specs (docs/sweeps.md): what the daemon queues for
// a sweep on its own and for a plan's array jobs, and what `gpuq fleet submit --array/--grid`
// puts in the bucket, from one recipe.
// Pure function over values; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "model/job.h"
#include "spec/sweep.h"

namespace gpuq::spec {

// Every element's spec: `base` named `name` + the element's suffix ("[3]", "[lr=3e-4]"), its
// arguments substituted (substitute_element: argv and script arguments; of each step, its name,
// argv, script arguments and done-if test; never a script's text) and its variables
// (GPUQ_ARRAY_INDEX, GPUQ_PARAM_*) set. GPUQ_ARRAY_ID
// comes with each run of a daemon's array (runner/run_env.h).
std::vector<JobSpec> element_specs(const JobSpec& base, const std::string& name,
                                   const Sweep& sweep);
// One element's spec, as element_specs makes each (for a caller that makes them one at a time).
JobSpec element_spec(const JobSpec& base, const std::string& name, const SweepElement& element);

}  // namespace gpuq::spec
