// SPDX-License-Identifier: Apache-2.0
// `gpuq hold ID...`: keeps pending jobs from starting (pending → held) until `gpuq release`.
#include "cli/commands.h"

namespace gpuq::cli {

int run_hold(Context& ctx, const JobRefsOptions& options) {
  return run_job_action(ctx, options.refs, options.json, "hold", "held");
}

}  // namespace gpuq::cli
