// SPDX-License-Identifier: Apache-2.0
// Where each value of a JSON text starts, by JSON pointer ("/jobs/3" -> line 12), because
// nlohmann::json keeps no positions and a plan's messages must name the line to edit.
// Owns a tree of the text's values built once from the text (one node per value, keyed by its
// reference token, so memory grows with the text, not with depth times width); immutable
// afterwards, so thread-safe to share. The tree is three flat arrays (nodes, and each node's
// children as a range of one list), not a map per node: a plan of 3,000 jobs has some 50,000
// values, and a map node per value was most of the time `gpuq simulate PLAN.json` took.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuq::spec {

class JsonLines {
 public:
  // `text` must be valid JSON (parse it with nlohmann first); on invalid text the map is
  // whatever could be read before the fault.
  explicit JsonLines(std::string_view text);

  // The 1-based line where the value at `pointer` starts; for a pointer that is not in the
  // text, the line of its nearest ancestor that is (1 for the root).
  int line(const std::string& pointer) const;

  // Appends one reference token to a pointer, escaping '~' and '/' (RFC 6901).
  static std::string child(const std::string& pointer, std::string_view token);
  static std::string child(const std::string& pointer, size_t index);

 private:
  struct Node {
    int line = 0;
    uint32_t parent = 0;
    bool array = false;
    std::string token;  // the key in its parent object; empty for an element of an array
  };
  // The child of node `parent` whose reference token is `token`, or nullopt.
  std::optional<uint32_t> find_child(uint32_t parent, std::string_view token) const;
  // Groups the children of each node into children_ (called once, after the text is read).
  void index_children();

  std::vector<Node> nodes_;  // nodes_[0] is the root value, when the text has one
  // The children of node n, in the text's order: children_[first_[n]] .. children_[first_[n+1]).
  std::vector<uint32_t> first_;
  std::vector<uint32_t> children_;
  // The same ranges, those of objects with more than kScanChildren keys sorted by key.
  std::vector<uint32_t> by_key_;
  static constexpr uint32_t kScanChildren = 16;
};

// The 1-based line of byte offset `offset` in `text`.
int line_of_offset(std::string_view text, size_t offset);

// The 1-based line of the fault that made json::parse(text) throw `error`. A parse_error carries
// its byte offset; any other exception (out_of_range 406: a number too large for a double) only
// quotes the offending text, which is looked up in `text`; 1 when it cannot be found.
int json_error_line(std::string_view text, const nlohmann::json::exception& error);

}  // namespace gpuq::spec
