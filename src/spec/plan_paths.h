// SPDX-License-Identifier: Apache-2.0
// The paths a plan file writes (a job's or a step's "script", "cwd", a "file:" dependency), as
// the plans of the queues people move from write them: a leading `~` is the submitter's home
// and `$NAME` or `${NAME}` a variable of the submitter's environment, expanded once when the plan
// is read; and a "script" may carry its arguments ("train.sh --lr 3e-4"), split as a shell
// splits words. Nothing else of a shell is interpreted (no globs, commands or `~user`).
// Pure functions; thread-safe.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace gpuq::spec {

// `text` with a leading `~` (alone or before '/') replaced by $HOME and every `$NAME`/`${NAME}`
// by its value in `env`. A `$` that is not followed by a name (or `{`) is kept as written.
// Errors (kInvalidArgument) name what is missing and the fix: an unset variable, `~user`, an
// unclosed `${`.
Result<std::string> expand_plan_path(std::string_view text,
                                     const std::map<std::string, std::string>& env);

// A "script" field read: the script's path (expanded) and the arguments written after it.
struct ScriptWords {
  std::string path;
  std::vector<std::string> args;
};

// Reads a "script" field. When the whole (expanded) text names an existing file (as
// `exists` says), that is the path, spaces and all; otherwise the text is split as shell words,
// the first being the path and the rest its arguments, each expanded as expand_plan_path does
// (a quoted word too). Errors name the fix, as expand_plan_path's, or an unbalanced quote.
Result<ScriptWords> read_script_words(std::string_view text,
                                      const std::map<std::string, std::string>& env,
                                      const std::function<bool(const std::string&)>& exists);

}  // namespace gpuq::spec
