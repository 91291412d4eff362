// SPDX-License-Identifier: Apache-2.0
// A plan's job arrays and grids in a simulation (docs/sweeps.md): each array job becomes its
// elements (NAME[3], NAME[lr=3e-4,seed=2]), each running as its base does; a dependency on an
// array's name becomes one on each of its elements; and the elements of an array capped at MAX
// share a lane `NAME%MAX` of MAX units, added to the machine, as the daemon's cap is a lane of
// the array's own, so at most MAX of them run at once in the simulation too.
// Pure function of its arguments; thread-safe.
#pragma once

#include <optional>
#include <vector>

#include "base/status.h"
#include "sim/simulate.h"
#include "spec/sweep.h"

namespace gpuq::sim {

// `jobs` with each job whose `sweeps` entry is set replaced by its elements (in place, in the
// sweep's order); `sweeps` is empty or one per job. Adds the capped arrays' lanes to `machine`.
Result<std::vector<SimJob>> expand_sweeps(std::vector<SimJob> jobs,
                                          const std::vector<std::optional<spec::Sweep>>& sweeps,
                                          SimMachine& machine);

}  // namespace gpuq::sim
