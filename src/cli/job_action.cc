// What `cancel`, `hold`, `release` and `retry` share: one POST per job (or, for `release
// --attention`, per GPU), in the order given; one failure does not stop the rest, but a missing
// daemon stops all. With --json the daemon's answers are printed together as one array, so a
// script reads one document whatever the number of jobs (docs/api.md, "The CLI's --json").
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/format.h"

namespace gpuq::cli {

int post_each(Context& ctx, const std::vector<std::string>& refs, bool json, const EachPost& post) {
  int status = kExitOk;
  Json answers = Json::array();
  for (const auto& ref : refs) {
    auto answer = ctx.client().post_json(post.target(ref), post.body);
    if (!answer) {
      if (answer.error().exit_code == kExitNoDaemon) {
        if (json && !answers.empty()) print_json(ctx, answers);  // what was done before
        return ctx.report(answer.error());
      }
      ctx.report(kExitFailed, fmt::format("cannot {} {}: {}", post.verb, post.label(ref),
                                          answer.error().message));
      answers.push_back(error_json(ref, answer.error()));
      status = kExitFailed;
      continue;
    }
    if (!json) ctx.out() << post.line(*answer) << '\n';
    answers.push_back(std::move(*answer));
  }
  if (json) print_json(ctx, answers);
  return status;
}

int run_job_action(Context& ctx, const std::vector<std::string>& refs, bool json,
                   std::string_view action, std::string_view done) {
  EachPost post;
  post.verb = action;
  post.target = [&](const std::string& ref) { return fmt::format("{}/{}", job_path(ref), action); };
  post.label = [](const std::string& ref) { return "job " + ref; };
  post.line = [&](const Json& job) {
    if (json_string(job, "cancel") == "requested") {
      // 202: the cancel holds, but the daemon's store cannot record it yet.
      return fmt::format("cancel of job {} requested: {}", field_text(job, "id"),
                         json_string(job, "note", "it is recorded once the store can be written"));
    }
    return fmt::format("{} job {}", done, field_text(job, "id"));
  };
  return post_each(ctx, refs, json, post);
}

}  // namespace gpuq::cli
