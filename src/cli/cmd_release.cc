// `gpuq release ID...`: lets held jobs start again (held → pending).
// `gpuq release --attention GPU`: a person checked a GPU in attention; it serves again.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/format.h"

namespace gpuq::cli {

int run_release(Context& ctx, const ReleaseOptions& options) {
  if (options.attention.empty()) return run_job_action(ctx, options.refs, "release", "released");
  int status = kExitOk;
  for (const auto& gpu : options.attention) {
    auto answer = ctx.client().post_json(fmt::format("/v1/gpus/{}/release", gpu), Json{{"attention", true}});
    if (!answer) {
      if (answer.error().exit_code == kExitNoDaemon) return ctx.report(answer.error());
      ctx.report(kExitFailed, fmt::format("cannot release {}: {}", gpu, answer.error().message));
      status = kExitFailed;
      continue;
    }
    ctx.out() << "released " << field_text(*answer, "gpu") << ": it serves again\n";
  }
  return status;
}

}  // namespace gpuq::cli
