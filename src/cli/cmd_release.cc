// `gpuq release ID...`: lets held jobs start again (held → pending).
#include "cli/commands.h"

namespace gpuq::cli {

int run_release(Context& ctx, const JobRefsOptions& options) {
  return run_job_action(ctx, options.refs, "release", "released");
}

}  // namespace gpuq::cli
