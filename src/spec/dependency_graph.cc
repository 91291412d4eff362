// SPDX-License-Identifier: Apache-2.0
#include "spec/dependency_graph.h"

#include <algorithm>
#include <set>
#include <utility>

namespace gpuq::spec {

std::vector<std::vector<std::string>> find_cycles(
    const std::vector<std::string>& nodes,
    const std::map<std::string, std::vector<std::string>>& edges) {
  enum class Color { kWhite, kGray, kBlack };
  const std::set<std::string> known(nodes.begin(), nodes.end());
  const std::vector<std::string> none;
  std::map<std::string, Color> color;
  std::vector<std::vector<std::string>> cycles;
  for (const auto& root : nodes) {
    if (color[root] != Color::kWhite) continue;
    // Each frame: a node on the current path and the index of its next edge to follow.
    std::vector<std::pair<std::string, size_t>> stack = {{root, 0}};
    color[root] = Color::kGray;
    while (!stack.empty()) {
      std::string node = stack.back().first;
      auto found = edges.find(node);
      const auto& out = found == edges.end() ? none : found->second;
      if (stack.back().second >= out.size()) {
        color[node] = Color::kBlack;
        stack.pop_back();
        continue;
      }
      const std::string next = out[stack.back().second++];
      if (!known.count(next)) continue;
      if (color[next] == Color::kGray) {
        auto start = std::find_if(stack.begin(), stack.end(),
                                  [&](const auto& f) { return f.first == next; });
        std::vector<std::string> cycle;
        for (auto it = start; it != stack.end(); ++it) cycle.push_back(it->first);
        cycle.push_back(next);
        cycles.push_back(std::move(cycle));
      } else if (color[next] == Color::kWhite) {
        color[next] = Color::kGray;
        stack.emplace_back(next, 0);
      }
    }
  }
  return cycles;
}

}  // namespace gpuq::spec
