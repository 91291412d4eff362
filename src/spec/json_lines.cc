#include "spec/json_lines.h"

#include <nlohmann/json.hpp>
#include <vector>

namespace gpuq::spec {
namespace {

struct Frame {
  size_t node = 0;        // the container's node
  bool object = false;
  bool want_key = false;  // in an object: the next string is a key
  size_t index = 0;       // in an array: the position of the next value
  std::string key;        // in an object: the key of the next value
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

size_t JsonLines::child_node(size_t parent, std::string token, int line) {
  auto [it, fresh] = nodes_[parent].children.try_emplace(std::move(token), nodes_.size());
  size_t node = it->second;  // read before push_back moves nodes_[parent]
  if (fresh) nodes_.push_back(Node{line, {}});
  return node;
}

JsonLines::JsonLines(std::string_view text) {
  nodes_.reserve(text.size() / 16);  // about one value per 16 bytes of a plan: fewer moves
  std::vector<Frame> stack;
  int line = 1;
  // The node of the value starting here: the root, or the next child of the open container.
  auto value_node = [&]() -> size_t {
    if (stack.empty()) {
      if (nodes_.empty()) nodes_.push_back(Node{line, {}});
      return 0;
    }
    Frame& f = stack.back();
    return child_node(f.node, f.object ? f.key : std::to_string(f.index), line);
  };
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (c == '{' || c == '[') {
      size_t node = value_node();
      stack.push_back(Frame{node, c == '{', c == '{', 0, ""});
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
        value_node();
      }
    } else if (c == ' ' || c == '\t' || c == '\r' || c == ':') {
      ++i;
    } else {
      // A number, true, false or null: runs to the next delimiter.
      value_node();
      while (i < text.size() &&
             std::string_view(",]} \t\r\n").find(text[i]) == std::string_view::npos)
        ++i;
    }
  }
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
    auto found = nodes_[node].children.find(token);
    if (found == nodes_[node].children.end()) break;  // the nearest ancestor in the text
    node = found->second;
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
