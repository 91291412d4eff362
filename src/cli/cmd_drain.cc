// SPDX-License-Identifier: Apache-2.0
// `gpuq drain` / `gpuq undrain`: one switch of the daemon. While it drains nothing new starts
// and running jobs finish; submits are still queued.
#include "cli/commands.h"
#include "cli/format.h"

namespace gpuq::cli {

int run_drain(Context& ctx, bool drain, bool json) {
  auto answer = ctx.client().post_json(drain ? "/v1/drain" : "/v1/undrain", Json::object());
  if (!answer) return ctx.report(answer.error());
  if (json) return print_json(ctx, *answer);
  ctx.out() << (drain ? "draining: nothing new starts; running jobs finish" : "serving again")
            << '\n';
  return kExitOk;
}

}  // namespace gpuq::cli
