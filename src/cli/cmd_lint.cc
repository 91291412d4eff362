// `gpuq lint FILE...`: checks job scripts and plans without queueing anything (src/spec).
// When a daemon answers on the socket, the jobs' GPU counts are checked against its GPUs too;
// without one that check is skipped, silently. Exit 1 when any finding is an error; warnings
// alone exit 0.
#include <algorithm>
#include <filesystem>

#include "base/heap.h"
#include "cli/commands.h"
#include "spec/lint.h"

namespace gpuq::cli {
namespace {

// The daemon's GPU count, or -1 when no daemon answers (lint works without one).
int machine_gpus(Context& ctx) {
  auto answer = ctx.client().get_json("/v1/gpus", kLintGpuQueryTimeout);
  if (!answer) return -1;
  return static_cast<int>(json_array(*answer, "resources").size());
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
  lint_options.machine_gpus = machine_gpus(ctx);
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
