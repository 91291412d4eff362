// SPDX-License-Identifier: Apache-2.0
// `gpuq lint FILE...`: checks job scripts and plans without queueing anything (src/spec).
// When a daemon answers on the socket, the jobs' GPU counts are checked against its GPUs, and
// sweeps against its `[sweeps] max_elements`, too; without one the GPU check is skipped,
// silently, and a sweep over the default limit is a warning. Exit 1 when any finding is an error;
// warnings alone exit 0.
#include <algorithm>
#include <filesystem>

#include "base/heap.h"
#include "cli/commands.h"
#include "cli/submit_env.h"
#include "spec/lint.h"

namespace gpuq::cli {
namespace {

// What the daemon that would run the jobs says of itself: its GPU count and its sweeps' limit;
// unknown (as the options' defaults say) when no daemon answers: lint works without one.
void ask_daemon(Context& ctx, spec::LintOptions& options) {
  auto answer = ctx.client().get_json("/v1/health", kLintGpuQueryTimeout);
  if (!answer) return;
  options.machine_gpus = static_cast<int>(json_array(*answer, "gpus").size());
  options.max_sweep_elements =
      static_cast<size_t>(json_int(*answer, "max_sweep_elements").value_or(0));
}

}  // namespace

int run_lint(Context& ctx, const LintOptions& options) {
  if (options.files.empty()) return ctx.report(kExitUsage, "lint: name at least one file");
  // A large plan becomes many small objects at once (base/heap.h): room for the largest file.
  auto largest = std::max_element(options.files.begin(), options.files.end(), [](const auto& a, const auto& b) {
    std::error_code ignored;  // a file that cannot be read counts as empty (size -1, plus 1)
    return std::filesystem::file_size(a, ignored) + 1 < std::filesystem::file_size(b, ignored) + 1;
  });
  prepare_heap_for_file(*largest);
  spec::LintOptions lint_options;
  lint_options.shell = environment_map(ctx.io().environ);  // for ~ and $NAME in plans' paths
  ask_daemon(ctx, lint_options);
  auto diagnostics = spec::lint_files(options.files, lint_options);
  bool errors = false;
  Json list = Json::array();
  for (const auto& d : diagnostics) {
    errors = errors || d.severity == spec::kError;
    if (options.json) {
      list.push_back(
          {{"file", d.file}, {"line", d.line}, {"severity", d.severity}, {"message", d.message}});
    } else {
      ctx.out() << d.text() << '\n';
    }
  }
  if (options.json) ctx.out() << json_text(list) << '\n';
  return errors ? kExitFailed : kExitOk;
}

}  // namespace gpuq::cli
