// What `cancel`, `hold`, `release` and `retry` share: one POST per job (or, for `release
// --attention`, per GPU), in the order given; one failure does not stop the rest, but a missing
// daemon stops all. With --json the daemon's answers are printed together as one array, so a
// script reads one document whatever the number of jobs (docs/api.md, "The CLI's --json").
#include <fmt/format.h>

#include <algorithm>

#include "cli/commands.h"
#include "cli/format.h"

namespace gpuq::cli {

int post_each(Context& ctx, const std::vector<std::string>& refs, bool json, const EachPost& post) {
  int status = kExitOk;
  Json answers = Json::array();
  std::vector<std::string> todo(refs.rbegin(), refs.rend());  // a stack, in the given order
  while (!todo.empty()) {
    std::string ref = std::move(todo.back());
    todo.pop_back();
    auto answer = ctx.client().post_json(post.target(ref), post.body);
    if (!answer && answer.error().code == "not_found" && post.expand) {
      if (auto elements = post.expand(ref)) {
        if (elements->empty()) {
          CliError none{kExitFailed, fmt::format("array {} has no element to {}", ref, post.verb), "conflict"};
          ctx.report(kExitFailed, fmt::format("cannot {} array {}: it has no element to {}", post.verb,
                                              ref, post.verb));
          answers.push_back(error_json(ref, none));
          status = kExitFailed;
          continue;
        }
        todo.insert(todo.end(), elements->rbegin(), elements->rend());
        continue;
      }
    }
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
                   std::string_view action, std::string_view done, std::vector<std::string> states) {
  EachPost post;
  if (!states.empty()) {
    post.expand = [&ctx, states](const std::string& ref) -> std::optional<std::vector<std::string>> {
      auto array = ctx.client().get_json("/v1/arrays/" + percent_encode(ref));
      if (!array) return std::nullopt;
      std::vector<std::string> elements;
      for (const auto& element : json_array(*array, "jobs")) {
        std::string state = json_string(element, "state");
        if (std::find(states.begin(), states.end(), state) == states.end()) continue;
        elements.push_back(std::to_string(json_int(element, "id").value_or(0)));
      }
      return elements;
    };
  }
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
