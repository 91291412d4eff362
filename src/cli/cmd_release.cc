// SPDX-License-Identifier: Apache-2.0
// `gpuq release ID...`: lets held jobs start again (held → pending).
// `gpuq release --attention GPU`: a person checked a GPU in attention; it serves again.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/format.h"

namespace gpuq::cli {

int run_release(Context& ctx, const ReleaseOptions& options) {
  if (options.attention.empty()) {
    return run_job_action(ctx, options.refs, options.json, "release", "released");
  }
  EachPost post;
  post.verb = "release";
  post.target = [](const std::string& gpu) { return fmt::format("/v1/gpus/{}/release", gpu); };
  post.label = [](const std::string& gpu) { return gpu; };
  post.body = Json{{"attention", true}};
  post.line = [](const Json& answer) {
    return "released " + field_text(answer, "gpu") + ": it serves again";
  };
  return post_each(ctx, options.attention, options.json, post);
}

}  // namespace gpuq::cli
