// SPDX-License-Identifier: Apache-2.0
#include "spec/json_lines.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gpuq::spec {
namespace {

constexpr uint32_t kDetached = UINT32_MAX;  // a value inside a repeated key's value

struct Frame {
  uint32_t node = 0;      // the container's node, or kDetached
  bool object = false;
  bool want_key = false;  // in an object: the next string is a key
  size_t index = 0;       // in an array: the position of the next value
  std::string key;        // in an object: the key of the next value
  // In an object: its keys so far, to find a repeated one: scanned while few, then mapped.
  std::vector<std::pair<std::string, uint32_t>> few_keys;
  std::unordered_map<std::string, uint32_t> many_keys;
  static constexpr size_t kFewKeys = 32;

  bool has_key(const std::string& name) const {
    if (!many_keys.empty()) return many_keys.contains(name);
    return std::any_of(few_keys.begin(), few_keys.end(), [&](const auto& k) { return k.first == name; });
  }
  void remember(const std::string& name, uint32_t node) {
    if (many_keys.empty() && few_keys.size() < kFewKeys) {
      few_keys.emplace_back(name, node);
      return;
    }
    for (auto& [k, n] : few_keys) many_keys.emplace(std::move(k), n);
    few_keys.clear();
    many_keys.emplace(name, node);
  }
};

// Decodes a JSON string token (quotes included) with nlohmann, so escapes mean what they mean;
// a token without escapes (nearly every key) is its own text.
std::string decode_string(std::string_view token) {
  if (token.size() >= 2 && token.back() == '"' && token.find('\\') == std::string_view::npos) {
    return std::string(token.substr(1, token.size() - 2));
  }
  try {
    return nlohmann::json::parse(token).get<std::string>();
  } catch (const nlohmann::json::exception&) {
    return std::string(token.substr(1, token.size() >= 2 ? token.size() - 2 : 0));
  }
}

}  // namespace

std::string JsonLines::child(const std::string& pointer, std::string_view token) {
  std::string out = pointer + "/";
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string JsonLines::child(const std::string& pointer, size_t index) {
  return pointer + "/" + std::to_string(index);
}

JsonLines::JsonLines(std::string_view text) {
  nodes_.reserve(text.size() / 8);  // a plan has about one value per 8-16 bytes: few moves
  std::vector<Frame> stack;
  int line = 1;
  // The node of the value starting here: the root, or the next child of the open container. A
  // repeated object key keeps its first value's node (the first value is the one a person reads
  // first), and what the repeated value holds is not looked up.
  auto value_node = [&](bool array) -> uint32_t {
    if (stack.empty()) {
      if (!nodes_.empty()) return kDetached;  // text after the root value
      nodes_.push_back(Node{line, 0, array, {}});
      return 0;
    }
    Frame& f = stack.back();
    if (f.node == kDetached) return kDetached;
    if (f.object && f.has_key(f.key)) return kDetached;
    auto node = static_cast<uint32_t>(nodes_.size());
    nodes_.push_back(Node{line, f.node, array, f.object ? f.key : std::string()});
    if (f.object) f.remember(f.key, node);
    return node;
  };
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (c == '{' || c == '[') {
      uint32_t node = value_node(c == '[');
      stack.push_back(Frame{node, c == '{', c == '{', 0, "", {}, {}});
      ++i;
    } else if (c == '}' || c == ']') {
      if (!stack.empty()) stack.pop_back();
      ++i;
    } else if (c == ',') {
      if (!stack.empty()) {
        if (stack.back().object) {
          stack.back().want_key = true;
        } else {
          ++stack.back().index;
        }
      }
      ++i;
    } else if (c == '"') {
      size_t begin = i++;
      while (i < text.size() && text[i] != '"') i += text[i] == '\\' ? 2 : 1;
      ++i;
      std::string_view token = text.substr(begin, std::min(i, text.size()) - begin);
      if (!stack.empty() && stack.back().object && stack.back().want_key) {
        stack.back().key = decode_string(token);
        stack.back().want_key = false;
      } else {
        value_node(false);
      }
    } else if (c == ' ' || c == '\t' || c == '\r' || c == ':') {
      ++i;
    } else {
      // A number, true, false or null: runs to the next delimiter.
      value_node(false);
      while (i < text.size() &&
             std::string_view(",]} \t\r\n").find(text[i]) == std::string_view::npos)
        ++i;
    }
  }
  index_children();
}

void JsonLines::index_children() {
  // A counting sort of the nodes by parent: nodes are numbered in the text's order, so each
  // node's children come out in the text's order too (an array's k-th child is its element k).
  first_.assign(nodes_.size() + 1, 0);
  for (size_t n = 1; n < nodes_.size(); ++n) ++first_[nodes_[n].parent + 1];
  for (size_t n = 1; n < first_.size(); ++n) first_[n] += first_[n - 1];
  children_.resize(nodes_.empty() ? 0 : nodes_.size() - 1);
  std::vector<uint32_t> next(first_.begin(), first_.end() - 1);
  for (size_t n = 1; n < nodes_.size(); ++n) children_[next[nodes_[n].parent]++] = static_cast<uint32_t>(n);
  // An object of many keys is also kept sorted by key, so a lookup in it is a binary search.
  by_key_ = children_;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (nodes_[n].array || first_[n + 1] - first_[n] <= kScanChildren) continue;
    std::sort(by_key_.begin() + first_[n], by_key_.begin() + first_[n + 1],
              [this](uint32_t a, uint32_t b) { return nodes_[a].token < nodes_[b].token; });
  }
}

std::optional<uint32_t> JsonLines::find_child(uint32_t parent, std::string_view token) const {
  const uint32_t* begin = children_.data() + first_[parent];
  const uint32_t* end = children_.data() + first_[parent + 1];
  if (nodes_[parent].array) {
    // The token of element k is k in decimal, with no sign and no leading zero.
    if (token.empty() || token.size() > 10 || (token.size() > 1 && token[0] == '0')) return std::nullopt;
    uint64_t k = 0;
    for (char c : token) {
      if (c < '0' || c > '9') return std::nullopt;
      k = k * 10 + static_cast<uint64_t>(c - '0');
    }
    if (k >= static_cast<uint64_t>(end - begin)) return std::nullopt;
    return begin[k];
  }
  if (end - begin > static_cast<ptrdiff_t>(kScanChildren)) {
    const uint32_t* sorted = by_key_.data() + first_[parent];
    const uint32_t* sorted_end = sorted + (end - begin);
    const uint32_t* found = std::lower_bound(
        sorted, sorted_end, token, [this](uint32_t a, std::string_view t) { return nodes_[a].token < t; });
    if (found != sorted_end && nodes_[*found].token == token) return *found;
    return std::nullopt;
  }
  for (const uint32_t* child = begin; child != end; ++child) {
    if (nodes_[*child].token == token) return *child;
  }
  return std::nullopt;
}

int JsonLines::line(const std::string& pointer) const {
  if (nodes_.empty()) return 1;
  size_t node = 0;
  std::string_view rest = pointer;
  while (!rest.empty() && rest.front() == '/') {
    rest.remove_prefix(1);
    size_t slash = rest.find('/');
    std::string_view escaped = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
    std::string token;  // RFC 6901: "~1" is '/', "~0" is '~'
    for (size_t k = 0; k < escaped.size(); ++k) {
      bool escape = escaped[k] == '~' && k + 1 < escaped.size() &&
                    (escaped[k + 1] == '0' || escaped[k + 1] == '1');
      if (escape) {
        token += escaped[++k] == '1' ? '/' : '~';
      } else {
        token += escaped[k];
      }
    }
    auto found = find_child(static_cast<uint32_t>(node), token);
    if (!found) break;  // the nearest ancestor in the text
    node = *found;
  }
  return nodes_[node].line;
}

int json_error_line(std::string_view text, const nlohmann::json::exception& error) {
  if (const auto* parse = dynamic_cast<const nlohmann::json::parse_error*>(&error)) {
    return line_of_offset(text, parse->byte == 0 ? 0 : parse->byte - 1);
  }
  std::string_view what = error.what();
  size_t open = what.find('\'');
  size_t close = what.rfind('\'');
  if (open == std::string_view::npos || close <= open + 1) return 1;
  size_t at = text.find(what.substr(open + 1, close - open - 1));
  return at == std::string_view::npos ? 1 : line_of_offset(text, at);
}

int line_of_offset(std::string_view text, size_t offset) {
  int line = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) line += text[i] == '\n';
  return line;
}

}  // namespace gpuq::spec
