// `gpuq retry ID...`: queues failed, cancelled or blocked jobs again (→ pending); the daemon
// also releases the jobs that were blocked by them.
#include "cli/commands.h"

namespace gpuq::cli {

int run_retry(Context& ctx, const JobRefsOptions& options) {
  // An array's failed, cancelled and blocked elements; with --failed, its failed ones only.
  std::vector<std::string> states = {"failed"};
  if (!options.failed) states.insert(states.end(), {"cancelled", "blocked"});
  return run_job_action(ctx, options.refs, options.json, "retry", "requeued", states);
}

}  // namespace gpuq::cli
