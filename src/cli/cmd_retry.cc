// SPDX-License-Identifier: Apache-2.0
// `gpuq retry ID...`: queues failed, cancelled or blocked jobs again (→ pending); the daemon
// also releases the jobs that were blocked by them. With --from-start a job with steps (or each
// retried element of an array) runs every step again.
#include "cli/commands.h"

namespace gpuq::cli {

int run_retry(Context& ctx, const JobRefsOptions& options) {
  // An array's failed, cancelled and blocked elements; with --failed, its failed ones only.
  Json array_body = Json::object();
  if (options.failed) array_body["failed"] = true;
  if (options.from_start) array_body["from_start"] = true;
  Json job_body = options.from_start ? Json{{"from_start", true}} : Json::object();
  return run_job_action(ctx, options.refs, options.json, "retry", "requeued", array_body, job_body);
}

}  // namespace gpuq::cli
