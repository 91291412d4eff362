// What `cancel`, `hold`, `release` and `retry` share: one POST per job, in the order given;
// one failure does not stop the rest, but a missing daemon stops all.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/format.h"

namespace gpuq::cli {

int run_job_action(Context& ctx, const std::vector<std::string>& refs, std::string_view action,
                   std::string_view done) {
  int status = kExitOk;
  for (const auto& ref : refs) {
    auto job = ctx.client().post_json(fmt::format("{}/{}", job_path(ref), action), Json::object());
    if (!job) {
      if (job.error().exit_code == kExitNoDaemon) return ctx.report(job.error());
      ctx.report(kExitFailed,
                 fmt::format("cannot {} job {}: {}", action, ref, job.error().message));
      status = kExitFailed;
      continue;
    }
    ctx.out() << done << " job " << field_text(*job, "id") << '\n';
  }
  return status;
}

}  // namespace gpuq::cli
