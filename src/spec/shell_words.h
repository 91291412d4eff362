// SPDX-License-Identifier: Apache-2.0
// Splitting a line into words as a POSIX shell quotes them, and nothing more: whitespace
// separates words; '...' keeps everything literal; "..." keeps everything but \" \\ \$ \` (and a
// backslash-newline, which is removed); a backslash outside quotes keeps the next character (and
// removes a backslash-newline). Nothing is expanded: no variables, globs, tildes or commands.
// Used for `#gpuq` header lines and for `gpuq submit --step TEXT`; since a step's words are run
// without a shell, its splitting may refuse what a shell would have interpreted, rather than
// pass it on as a surprising argument. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace gpuq::spec {

struct ShellWordsRules {
  // An unquoted word that begins with '#' starts a comment: it and the rest are dropped.
  bool comments = false;
  // Refuse unquoted shell syntax: | & ; < > ( ) ` $ and newlines, a word that begins with '#'
  // or '~', and a first word NAME=VALUE (a variable assignment); and $ or ` inside "...".
  bool refuse_shell_syntax = false;
};

// The words of `text`. Errors (kInvalidArgument) say what is wrong without the fix, which
// depends on where the text came from: "unbalanced double quote in \"3e-4", or "'&&' is shell
// syntax, ...".
Result<std::vector<std::string>> split_shell_words(std::string_view text,
                                                   const ShellWordsRules& rules = {});

}  // namespace gpuq::spec
