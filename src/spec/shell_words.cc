// SPDX-License-Identifier: Apache-2.0
#include "spec/shell_words.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpuq::spec {
namespace {

constexpr std::string_view kOperators = "|&;<>()";
constexpr std::string_view kWithShell =
    "quote it to pass it as it is, or run a shell: bash -c '...'";

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// The syntax that begins at text[i], as a person wrote it: "&&", "$OUT", "`".
std::string_view syntax_at(std::string_view text, size_t i) {
  size_t end = i + 1;
  if (kOperators.find(text[i]) != std::string_view::npos && text[i] != '(' && text[i] != ')') {
    while (end < text.size() && std::string_view("|&;<>").find(text[end]) != std::string_view::npos)
      ++end;
  } else if (text[i] == '$') {
    while (end < text.size() && (is_name_char(text[end]) || text[end] == '{' || text[end] == '}'))
      ++end;
  }
  return text.substr(i, end - i);
}

tl::unexpected<Error> refused_syntax(std::string_view text, size_t i) {
  char c = text[i];
  if (c == '\n') {
    return invalid_argument(
        "a newline separates commands in a shell, and these words are one command: "
        "give each command its own step");
  }
  if (c == '$' || c == '`') {
    return invalid_argument(
        fmt::format("'{}' would be expanded by a shell, but these words are run "
                    "without one; {}",
                    syntax_at(text, i), kWithShell));
  }
  if (c == '#') {
    return invalid_argument(fmt::format("'#' begins a comment in a shell; {}", kWithShell));
  }
  if (c == '~') {
    return invalid_argument(
        "'~' would be a home directory in a shell, but nothing is expanded here: "
        "write the path in full");
  }
  return invalid_argument(
      fmt::format("'{}' is shell syntax, but these words are run without a shell "
                  "(nothing is piped, redirected, chained or put in the background); {}",
                  syntax_at(text, i), kWithShell));
}

// Whether the first word is NAME=VALUE with no quote before the '=': a variable assignment.
bool is_assignment(const std::string& word, size_t quoted_from) {
  size_t eq = word.find('=');
  if (eq == std::string::npos || eq == 0 || quoted_from < eq) return false;
  if (word[0] >= '0' && word[0] <= '9') return false;
  return std::all_of(word.begin(), word.begin() + static_cast<std::ptrdiff_t>(eq), is_name_char);
}

}  // namespace

Result<std::vector<std::string>> split_shell_words(std::string_view text,
                                                   const ShellWordsRules& rules) {
  const bool strict = rules.refuse_shell_syntax;
  std::vector<std::string> words;
  const size_t n = text.size();
  size_t i = 0;
  auto unbalanced = [&](char quote, size_t word_start) {
    std::string_view rest = text.substr(word_start);
    while (!rest.empty() && is_blank(rest.back())) rest.remove_suffix(1);
    return invalid_argument(
        fmt::format("unbalanced {} quote in {}", quote == '"' ? "double" : "single", rest));
  };
  while (true) {
    while (i < n && is_blank(text[i])) {
      if (strict && text[i] == '\n') return refused_syntax(text, i);
      ++i;
    }
    if (i >= n) break;
    if (text[i] == '#' && rules.comments) break;
    if (strict && (text[i] == '#' || text[i] == '~')) return refused_syntax(text, i);
    std::string word;
    size_t quoted_from = std::string::npos;  // the word's length when its first quote came
    const size_t word_start = i;
    while (i < n && !is_blank(text[i])) {
      char c = text[i];
      bool continuation =
          c == '\\' && i + 1 < n && text[i + 1] == '\n';  // removed, as if never written
      if ((c == '\'' || c == '"' || c == '\\') && !continuation) {
        quoted_from = std::min(quoted_from, word.size());
      }
      if (c == '\'') {
        size_t close = text.find('\'', i + 1);
        if (close == std::string_view::npos) return unbalanced(c, word_start);
        word.append(text.substr(i + 1, close - i - 1));
        i = close + 1;
      } else if (c == '"') {
        for (++i; i < n && text[i] != '"'; ++i) {
          if (text[i] == '\\' && i + 1 < n &&
              std::string_view("\"\\$`\n").find(text[i + 1]) != std::string_view::npos) {
            if (text[++i] != '\n') word += text[i];
            continue;
          }
          if (strict && (text[i] == '$' || text[i] == '`')) return refused_syntax(text, i);
          word += text[i];
        }
        if (i >= n) return unbalanced(c, word_start);
        ++i;
      } else if (c == '\\' && i + 1 < n) {
        if (text[i + 1] != '\n') word += text[i + 1];
        i += 2;
      } else {
        if (strict && (kOperators.find(c) != std::string_view::npos || c == '$' || c == '`')) {
          return refused_syntax(text, i);
        }
        word += c;
        ++i;
      }
    }
    if (word.empty() && quoted_from == std::string::npos) continue;  // only continuations
    if (strict && words.empty() && is_assignment(word, quoted_from)) {
      return invalid_argument(
          fmt::format("'{}' would set a variable in a shell, but these words are run "
                      "without one: set it in the job's environment (--env, or a "
                      "plan's \"env\"), or write env {} ...",
                      word, word));
    }
    words.push_back(std::move(word));
  }
  return words;
}

}  // namespace gpuq::spec
