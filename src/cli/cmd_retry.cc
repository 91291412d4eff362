// `gpuq retry ID...`: queues failed, cancelled or blocked jobs again (→ pending); the daemon
// also releases the jobs that were blocked by them.
#include "cli/commands.h"

namespace gpuq::cli {

int run_retry(Context& ctx, const JobRefsOptions& options) {
  // An array's failed, cancelled and blocked elements; with --failed, its failed ones only.
  Json array_body = options.failed ? Json{{"failed", true}} : Json::object();
  Json job_body = options.from_start ? Json{{"from_start", true}} : Json::object();
  return run_job_action(ctx, options.refs, options.json, "retry", "requeued", array_body, job_body);
}

}  // namespace gpuq::cli
