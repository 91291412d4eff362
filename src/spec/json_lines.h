// Where each value of a JSON text starts, by JSON pointer ("/jobs/3" -> line 12), because
// nlohmann::json keeps no positions and a plan's messages must name the line to edit.
// Owns a tree of the text's values built once from the text (one node per value, keyed by its
// reference token, so memory grows with the text, not with depth times width); immutable
// afterwards, so thread-safe to share.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
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
    std::map<std::string, size_t, std::less<>> children;  // reference token -> index in nodes_
  };
  // The child of `parent` for `token`, created at `line` when new; a repeated object key keeps
  // its first line, as the first value is the one a person reads first.
  size_t child_node(size_t parent, std::string token, int line);

  std::vector<Node> nodes_;  // nodes_[0] is the root value, when the text has one
};

// The 1-based line of byte offset `offset` in `text`.
int line_of_offset(std::string_view text, size_t offset);

// The 1-based line of the fault that made json::parse(text) throw `error`. A parse_error carries
// its byte offset; any other exception (out_of_range 406: a number too large for a double) only
// quotes the offending text, which is looked up in `text`; 1 when it cannot be found.
int json_error_line(std::string_view text, const nlohmann::json::exception& error);

}  // namespace gpuq::spec
