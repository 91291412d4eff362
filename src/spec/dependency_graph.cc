// SPDX-License-Identifier: Apache-2.0
#include "spec/dependency_graph.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace gpuq::spec {

std::vector<std::vector<std::string>> find_cycles(
    const std::vector<std::string>& nodes,
    const std::map<std::string, std::vector<std::string>>& edges) {
  // Names become indexes once (a name written twice is one node), so that the search compares
  // integers: a plan of thousands of jobs is searched in well under a millisecond.
  std::unordered_map<std::string_view, size_t> index;
  index.reserve(nodes.size());
  std::vector<const std::string*> names;
  for (const auto& name : nodes) {
    if (index.emplace(name, names.size()).second) names.push_back(&name);
  }
  std::vector<std::vector<size_t>> out(names.size());
  for (const auto& [name, targets] : edges) {
    auto from = index.find(name);
    if (from == index.end()) continue;  // never reached: the search starts from nodes only
    for (const auto& target : targets) {
      if (auto to = index.find(target); to != index.end()) out[from->second].push_back(to->second);
    }
  }
  enum class Color : char { kWhite, kGray, kBlack };
  std::vector<Color> color(names.size(), Color::kWhite);
  std::vector<std::vector<std::string>> cycles;
  // Each frame: a node on the current path and the index of its next edge to follow.
  std::vector<std::pair<size_t, size_t>> stack;
  for (const auto& root_name : nodes) {
    size_t root = index.at(root_name);
    if (color[root] != Color::kWhite) continue;
    stack.assign(1, {root, 0});
    color[root] = Color::kGray;
    while (!stack.empty()) {
      auto& [node, next_edge] = stack.back();
      if (next_edge >= out[node].size()) {
        color[node] = Color::kBlack;
        stack.pop_back();
        continue;
      }
      size_t next = out[node][next_edge++];
      if (color[next] == Color::kGray) {
        auto start = std::find_if(stack.begin(), stack.end(),
                                  [&](const auto& frame) { return frame.first == next; });
        std::vector<std::string> cycle;
        for (auto it = start; it != stack.end(); ++it) cycle.push_back(*names[it->first]);
        cycle.push_back(*names[next]);
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
