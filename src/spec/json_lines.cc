#include "spec/json_lines.h"

#include <nlohmann/json.hpp>
#include <vector>

namespace gpuq::spec {
namespace {

struct Frame {
  bool object = false;
  bool want_key = false;  // in an object: the next string is a key
  size_t index = 0;       // in an array: the position of the next value
  std::string key;        // in an object: the key of the next value
  std::string pointer;
};

// Decodes a JSON string token (quotes included) with nlohmann, so escapes mean what they mean.
std::string decode_string(std::string_view token) {
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
  std::vector<Frame> stack;
  int line = 1;
  auto value_pointer = [&]() -> std::string {
    if (stack.empty()) return "";
    const Frame& f = stack.back();
    return f.object ? child(f.pointer, f.key) : child(f.pointer, f.index);
  };
  auto record = [&](const std::string& pointer) { lines_.emplace(pointer, line); };
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (c == '{' || c == '[') {
      std::string pointer = value_pointer();
      record(pointer);
      stack.push_back(Frame{c == '{', c == '{', 0, "", pointer});
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
        record(value_pointer());
      }
    } else if (c == ' ' || c == '\t' || c == '\r' || c == ':') {
      ++i;
    } else {
      // A number, true, false or null: runs to the next delimiter.
      record(value_pointer());
      while (i < text.size() &&
             std::string_view(",]} \t\r\n").find(text[i]) == std::string_view::npos)
        ++i;
    }
  }
}

int JsonLines::line(const std::string& pointer) const {
  std::string p = pointer;
  while (true) {
    if (auto it = lines_.find(p); it != lines_.end()) return it->second;
    size_t slash = p.rfind('/');
    if (p.empty() || slash == std::string::npos) return 1;
    p.erase(slash);
  }
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
