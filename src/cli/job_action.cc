// SPDX-License-Identifier: Apache-2.0
// What `cancel`, `hold`, `release` and `retry` share: one POST per job (or, for `release
// --attention`, per GPU), in the order given; one failure does not stop the rest, but a missing
// daemon stops all. A name no job has may name an array: it is acted on as one, in one request.
// With --json the daemon's answers are printed together as one array (an array's elements
// each in it), so a script reads one document whatever the number of jobs (docs/api.md, "The
// CLI's --json").
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/format.h"

namespace gpuq::cli {
namespace {

// What post_each has done so far.
struct Answers {
  Json list = Json::array();
  int status = kExitOk;
};

// An array's answer (POST /v1/arrays/{ref}/<verb>): each element acted on as if alone, then
// each it refused. A brief answer (what the table asks for) has the elements' ids, not their jobs.
void take_array_answer(Context& ctx, bool json, const EachPost& post, const Json& acted, Answers& out) {
  bool requested = json_string(acted, "cancel") == "requested";
  Json jobs = json_array(acted, "jobs");
  for (const Json& id : json_array(acted, "ids")) jobs.push_back(Json{{"id", id}});
  for (Json job : jobs) {
    if (requested) {
      job["cancel"] = "requested";
      job["note"] = acted.value("note", "");
    }
    if (!json) ctx.out() << post.line(job) << '\n';
    out.list.push_back(std::move(job));
  }
  for (const Json& refused : json_array(acted, "refused")) {
    std::string id = field_text(refused, "id");
    CliError error{kExitFailed, json_string(refused, "error"), "conflict"};
    ctx.report(kExitFailed, fmt::format("cannot {} job {}: {}", post.verb, id, error.message));
    out.list.push_back(error_json(id, error));
    out.status = kExitFailed;
  }
}

}  // namespace

int post_each(Context& ctx, const std::vector<std::string>& refs, bool json, const EachPost& post) {
  Answers out;
  for (const std::string& ref : refs) {
    std::string label = post.label(ref);
    auto answer = ctx.client().post_json(post.target(ref), post.body);
    if (!answer && answer.error().code == "not_found" && post.array_target) {
      // Without --json only the ids are printed: the daemon need not send a million jobs.
      Json array_body = post.array_body;
      if (!json) array_body["brief"] = true;
      auto acted = ctx.client().post_json(post.array_target(ref), array_body);
      if (!acted && acted.error().code == "invalid_argument" && !json) {
        acted = ctx.client().post_json(post.array_target(ref), post.array_body);  // a daemon before "brief"
      }
      if (acted) {
        take_array_answer(ctx, json, post, *acted, out);
        continue;
      }
      if (acted.error().code != "not_found") {
        answer = std::move(acted);  // an array of that name, which refused: its error stands
        label = "array " + ref;
      }
    }
    if (!answer) {
      if (answer.error().exit_code == kExitNoDaemon) {
        if (json && !out.list.empty()) print_json(ctx, out.list);  // what was done before
        return ctx.report(answer.error());
      }
      ctx.report(kExitFailed, fmt::format("cannot {} {}: {}", post.verb, label, answer.error().message));
      out.list.push_back(error_json(ref, answer.error()));
      out.status = kExitFailed;
      continue;
    }
    if (!json) ctx.out() << post.line(*answer) << '\n';
    out.list.push_back(std::move(*answer));
  }
  if (json) print_json(ctx, out.list);
  return out.status;
}

int run_job_action(Context& ctx, const std::vector<std::string>& refs, bool json,
                   std::string_view action, std::string_view done, Json array_body, Json job_body) {
  EachPost post;
  post.verb = action;
  post.body = std::move(job_body);
  post.target = [&](const std::string& ref) { return fmt::format("{}/{}", job_path(ref), action); };
  post.array_target = [&](const std::string& ref) {
    return fmt::format("/v1/arrays/{}/{}", percent_encode(ref), action);
  };
  post.array_body = std::move(array_body);
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
