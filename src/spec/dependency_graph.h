// SPDX-License-Identifier: Apache-2.0
// Cycles among the jobs of a plan: a job that waits, through any chain, for itself can never
// start, so a plan holding one is refused before anything is queued. Iterative, so a long chain
// of jobs cannot overflow the stack.
// Pure function; thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace gpuq::spec {

// `nodes` in the order people wrote them; `edges[a]` the nodes a waits for (targets that are not
// nodes are ignored). Each cycle is returned once, as the path that closes it, starting and
// ending with the same node ({"a", "b", "a"}), found from the earliest node in `nodes`.
std::vector<std::vector<std::string>> find_cycles(
    const std::vector<std::string>& nodes,
    const std::map<std::string, std::vector<std::string>>& edges);

}  // namespace gpuq::spec
