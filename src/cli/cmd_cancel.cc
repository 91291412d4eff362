// SPDX-License-Identifier: Apache-2.0
// `gpuq cancel ID...`: asks the daemon to cancel each job; one failure does not stop the rest.
#include "cli/commands.h"

namespace gpuq::cli {

int run_cancel(Context& ctx, const CancelOptions& options) {
  return run_job_action(ctx, options.refs, options.json, "cancel", "cancelled");
}

}  // namespace gpuq::cli
