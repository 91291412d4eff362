// `gpuq fleet submit`: each script read as `gpuq submit` reads one (its `#gpuq` headers, then
// the flags; build_submit_request), turned into a fleet job: only --env travels, no working
// directory, job dependencies become the fleet's `after`, and the job goes to a class queue or
// is pinned to a node. With --chain, each job is after the one before it.
#include <fmt/format.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/fleet_commands.h"
#include "cli/fleet_format.h"
#include "cli/format.h"
#include "fleet/client.h"
#include "model/spec_json.h"

namespace gpuq::cli {
namespace {

// The job's name: --name for one file, NAME-1, NAME-2, ... for several; else the header's.
std::string name_for(const FleetSubmitOptions& options, size_t index) {
  if (options.name.empty()) return "";
  if (options.files.size() == 1) return options.name;
  return fmt::format("{}-{}", options.name, index + 1);
}

// "user@host", for people reading `fleet show`.
std::string submitter(const std::vector<std::string>& environ) {
  std::string user = "?";
  for (const auto& entry : environ) {
    if (entry.starts_with("USER=")) user = entry.substr(5);
  }
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return fmt::format("{}@{}", user, host[0] ? host : "?");
}

bool is_job_dependency(Dependency::Kind kind) {
  return kind == Dependency::Kind::kAfterOk || kind == Dependency::Kind::kAfterAny ||
         kind == Dependency::Kind::kAfterNotOk;
}

// A submit request (docs/api.md) as a fleet job.
Outcome<fleet::FleetJob> fleet_job(const std::string& file, const Json& request,
                                   const FleetSubmitOptions& options, int64_t now_ms,
                                   const std::vector<std::string>& environ) {
  auto body = nlohmann::json::parse(json_text(request), nullptr, false);
  auto spec = spec_from_json(body);
  if (!spec) return cli_fail(kExitUsage, fmt::format("{}: {}", file, spec.error().message));
  fleet::FleetJob job;
  job.id = fleet::new_job_id(now_ms);
  job.name = spec->name;
  job.node = options.node;
  if (job.node.empty()) job.klass = options.klass.empty() ? "any" : options.klass;
  job.submitted_ms = now_ms;
  job.submitted_by = submitter(environ);
  job.spec = std::move(*spec);
  job.spec.cwd.clear();  // a node runs it in its own [fleet] workdir
  std::vector<Dependency> kept;
  for (auto& dep : job.spec.deps) {
    if (is_job_dependency(dep.kind)) {
      job.after.push_back({dep.kind, dep.target});
    } else {
      kept.push_back(std::move(dep));  // wait_file and requires run on the node
    }
  }
  job.spec.deps = std::move(kept);
  return job;
}

std::string queue_text(const fleet::FleetJob& job) {
  return job.node.empty() ? "class " + job.klass : "node " + job.node;
}

}  // namespace

Outcome<std::vector<fleet::FleetJob>> build_fleet_jobs(const FleetSubmitOptions& options,
                                                       const Io& io, int64_t now_ms) {
  if (options.files.empty()) return cli_fail(kExitUsage, "give one or more job scripts");
  for (const auto& [flag, value] : {std::pair{"--class", &options.klass},
                                    std::pair{"--node", &options.node},
                                    std::pair{"--name", &options.name}}) {
    if (value->empty()) continue;
    if (auto st = fleet::check_name(flag + 2, *value); !st) {
      return cli_fail(kExitUsage, fmt::format("{}: {}", flag, st.error().message));
    }
  }
  std::vector<fleet::FleetJob> jobs;
  for (size_t i = 0; i < options.files.size(); ++i) {
    SubmitOptions submit;
    submit.name = name_for(options, i);
    submit.gpus = options.gpus;
    submit.priority = options.priority;
    submit.env = options.env;
    // --after NAME waits for success; afterany:NAME and afternotok:NAME as `gpuq submit`'s
    // --after-any and --after-notok (afterok:NAME is the same as NAME).
    for (const std::string& after : options.after) {
      std::string_view text = after;
      if (text.starts_with("afterany:")) {
        submit.after_any.emplace_back(text.substr(9));
      } else if (text.starts_with("afternotok:")) {
        submit.after_notok.emplace_back(text.substr(11));
      } else {
        submit.after.emplace_back(text.starts_with("afterok:") ? text.substr(8) : text);
      }
    }
    submit.words = {options.files[i]};
    // No environ: only --env travels. The cwd is checked, then dropped (fleet_job).
    auto request = build_submit_request(submit, {}, io.cwd, now_ms);
    if (!request) return tl::unexpected(request.error());
    auto job = fleet_job(options.files[i], *request, options, now_ms, io.environ);
    if (!job) return tl::unexpected(job.error());
    if (!job->name.empty()) {
      if (auto st = fleet::check_name("name", job->name); !st) {
        return cli_fail(kExitUsage, fmt::format("{}: {}", options.files[i], st.error().message));
      }
    }
    jobs.push_back(std::move(*job));
  }
  return jobs;
}

int run_fleet_submit(Context& ctx, fleet::ObjectStore& store, const FleetSubmitOptions& options,
                     bool json) {
  auto jobs = build_fleet_jobs(options, ctx.io(), ctx.io().wall_ms());
  if (!jobs) return ctx.report(jobs.error());
  Json printed = Json::array();
  std::string previous;  // the chain's job before: its name, else its id
  for (auto& job : *jobs) {
    if (options.chain && !previous.empty()) {
      job.after.push_back({Dependency::Kind::kAfterOk, previous});
    }
    auto result = fleet::submit(store, job);
    if (!result) {
      if (json && !printed.empty()) print_json(ctx, printed);
      return report_fleet_error(ctx, result.error());
    }
    const fleet::FleetJob& stored = result->job;
    previous = stored.name.empty() ? stored.id : stored.name;
    const char* verb = result->existing ? "existing" : "submitted";
    if (json) {
      Json item = fleet_job_json(stored);
      item["result"] = verb;
      item["repaired"] = result->repaired;
      printed.push_back(std::move(item));
      continue;
    }
    std::string label = stored.name.empty() ? stored.id : stored.id + " " + stored.name;
    ctx.out() << fmt::format("{} {} {} {}\n", verb, label, result->existing ? "in" : "to",
                             queue_text(stored));
  }
  if (json) print_json(ctx, printed);
  return kExitOk;
}

}  // namespace gpuq::cli
