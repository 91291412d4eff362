// `gpuq cancel ID...`: asks the daemon to cancel each job; one failure does not stop the rest.
#include "cli/commands.h"
#include "cli/format.h"

namespace gpuq::cli {

int run_cancel(Context& ctx, const CancelOptions& options) {
  int status = kExitOk;
  for (const auto& ref : options.refs) {
    auto job = ctx.client().post_json(job_path(ref) + "/cancel", Json::object());
    if (!job) {
      if (job.error().exit_code == kExitNoDaemon) return ctx.report(job.error());
      ctx.report(kExitFailed, "cannot cancel job " + ref + ": " + job.error().message);
      status = kExitFailed;
      continue;
    }
    ctx.out() << "cancelled job " << field_text(*job, "id") << '\n';
  }
  return status;
}

}  // namespace gpuq::cli
