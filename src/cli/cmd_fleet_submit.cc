// SPDX-License-Identifier: Apache-2.0
// `gpuq fleet submit`: each script read as `gpuq submit` reads one (its `#gpuq` headers, then
// the flags; build_submit_request), or the steps of --step as one job, turned into a fleet job
// (its spec travels whole: steps and container fields included): only --env travels, no working
// directory, job dependencies become the fleet's `after`, and the job goes to a class queue or
// is pinned to a node (or to one GPU of it: --node NODE-gpuK). With --chain, each job is after
// the one before it. A sweep (--array,
// --grid or the script's `#gpuq array=`/`grid=`) becomes one fleet job per element, NAME.INDEX.
#include <fmt/format.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/fleet_commands.h"
#include "cli/fleet_format.h"
#include "cli/format.h"
#include "fleet/client.h"
#include "model/spec_json.h"
#include "spec/sweep.h"
#include "spec/sweep_specs.h"

namespace gpuq::cli {
namespace {

// The job's name: --name for one file (or the job of --step), NAME-1, NAME-2, ... for several;
// else the header's.
std::string name_for(const FleetSubmitOptions& options, size_t index) {
  if (options.name.empty()) return "";
  if (options.files.size() <= 1) return options.name;
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
    if (dep.on_job()) {
      job.after.push_back({dep.kind, dep.target});
    } else {
      kept.push_back(std::move(dep));  // wait_file and requires run on the node
    }
  }
  job.spec.deps = std::move(kept);
  return job;
}

// Takes the sweep out of a submit request ("array" or "grid"; nullopt when it has none). The
// fleet has no arrays: a cap (%MAX, max-running=) is refused, since nothing would count an
// array's running elements across nodes, and so is more than the default [sweeps] max_elements
// (each element is a job of its own in the bucket).
Outcome<std::optional<spec::Sweep>> take_fleet_sweep(const std::string& file, Json& request) {
  Json array = request.contains("array") ? request["array"] : Json();
  Json grid = request.contains("grid") ? request["grid"] : Json();
  bool capped = request.contains("max_running");
  for (const char* key : {"array", "grid", "max_running"}) request.erase(key);
  if (array.is_null() && grid.is_null()) return std::optional<spec::Sweep>();
  auto bad = [&](const std::string& why) {
    return cli_fail(kExitUsage, fmt::format("{}: {}", file, why));
  };
  Result<spec::Sweep> sweep = spec::Sweep{};
  if (!array.is_null()) {
    sweep = spec::parse_array(array.get<std::string>(), spec::kMostSweepElements);
  } else {
    std::vector<spec::SweepParam> params;
    for (const auto& text : grid) {
      auto param = spec::parse_grid_param(text.get<std::string>(), spec::kMostSweepElements);
      if (!param) return bad(param.error().message);
      params.push_back(std::move(*param));
    }
    sweep = spec::make_grid(std::move(params), 0, spec::kMostSweepElements);
  }
  if (!sweep) return bad(sweep.error().message);
  if (capped || sweep->max_running > 0) {
    return bad(
        "a sweep in the fleet has no cap (%MAX, --max-running, max-running=): nothing "
        "counts its running elements across the nodes; leave the cap out");
  }
  if (sweep->size() > spec::kDefaultMaxSweepElements) {
    return bad(
        fmt::format("the sweep has {} elements, more than {}: each is a job of its own in "
                    "the fleet's store; split it",
                    sweep->size(), spec::kDefaultMaxSweepElements));
  }
  return std::optional<spec::Sweep>(std::move(*sweep));
}

// The fleet jobs of a sweep's elements: `base` once per element, named NAME.INDEX (a fleet
// name holds no brackets), with its arguments substituted and GPUQ_ARRAY_INDEX/GPUQ_PARAM_* set.
Outcome<std::vector<fleet::FleetJob>> element_jobs(const std::string& file,
                                                   const fleet::FleetJob& base,
                                                   const spec::Sweep& sweep, int64_t now_ms) {
  if (base.name.empty()) {
    return cli_fail(kExitUsage,
                    fmt::format("{}: a sweep in the fleet needs a name (--name, or "
                                "name= in the header): its jobs are NAME.0, NAME.1, ...",
                                file));
  }
  std::vector<spec::SweepElement> elements = spec::sweep_elements(sweep);
  std::vector<JobSpec> specs = spec::element_specs(base.spec, base.name, sweep);
  std::vector<fleet::FleetJob> jobs;
  jobs.reserve(specs.size());
  for (size_t k = 0; k < specs.size(); ++k) {
    fleet::FleetJob job = base;
    job.id = fleet::new_job_id(now_ms);
    job.name = fmt::format("{}.{}", base.name, elements[k].index);
    job.spec = std::move(specs[k]);
    job.spec.name = job.name;
    jobs.push_back(std::move(job));
  }
  return jobs;
}

std::string queue_text(const fleet::FleetJob& job) {
  if (auto gpu = fleet::pinned_gpu(job.spec)) return fmt::format("node {} gpu{}", job.node, *gpu);
  return job.node.empty() ? "class " + job.klass : "node " + job.node;
}

// `--node NODE-gpuK` (fleet::resolve_node_target): every job pinned to NODE and, through GPU K's
// reservation, to that GPU alone; a job that asks for no GPU holds that one, more is refused.
Outcome<bool> pin_to_gpu(std::vector<fleet::FleetJob>& jobs, const fleet::NodeTarget& target,
                         const std::string& given) {
  for (auto& job : jobs) {
    job.node = target.node;
    if (!target.gpu) continue;
    if (job.spec.gpus > 1) {
      std::string what = !job.spec.script_name.empty() ? job.spec.script_name
                         : job.name.empty()            ? std::string("the job")
                                                       : job.name;
      return cli_fail(kExitUsage,
                      fmt::format("--node {} pins a job to one GPU, but {} asks for {} GPUs; give "
                                  "--gpus 1, or --node {} for any of its GPUs",
                                  given, what, job.spec.gpus, target.node));
    }
    job.spec.gpus = 1;
    job.spec.reservation = fleet::gpu_reservation(*target.gpu);
  }
  return true;
}

}  // namespace

Outcome<std::vector<fleet::FleetJob>> build_fleet_jobs(const FleetSubmitOptions& options,
                                                       const Io& io, int64_t now_ms) {
  if (options.files.empty() && options.steps.empty()) {
    return cli_fail(kExitUsage, "give one or more job scripts, or the steps of one job (--step)");
  }
  // What each job is made from: a file, or (one job) the steps; named in messages.
  const std::vector<std::string> sources =
      options.steps.empty() ? options.files : std::vector<std::string>{"--step"};
  for (const auto& [flag, value] : {std::pair{"--class", &options.klass},
                                    std::pair{"--node", &options.node},
                                    std::pair{"--name", &options.name}}) {
    if (value->empty()) continue;
    if (auto st = fleet::check_name(flag + 2, *value); !st) {
      return cli_fail(kExitUsage, fmt::format("{}: {}", flag, st.error().message));
    }
  }
  std::vector<fleet::FleetJob> jobs;
  for (size_t i = 0; i < sources.size(); ++i) {
    SubmitOptions submit;
    submit.name = name_for(options, i);
    submit.image = options.image;
    submit.pull = options.pull;
    submit.container_user = options.container_user;
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
    submit.array = options.array;
    submit.grid = options.grid;
    if (options.steps.empty()) {
      submit.words = {options.files[i]};
    } else {
      submit.steps = options.steps;
    }
    // No environ: only --env travels. The cwd is checked, then dropped (fleet_job).
    auto request = build_submit_request(submit, {}, io.cwd, now_ms);
    if (!request) return tl::unexpected(request.error());
    auto sweep = take_fleet_sweep(sources[i], *request);
    if (!sweep) return tl::unexpected(sweep.error());
    auto job = fleet_job(sources[i], *request, options, now_ms, io.environ);
    if (!job) return tl::unexpected(job.error());
    std::vector<fleet::FleetJob> made;
    if (*sweep) {
      auto elements = element_jobs(sources[i], *job, **sweep, now_ms);
      if (!elements) return tl::unexpected(elements.error());
      made = std::move(*elements);
    } else {
      made.push_back(std::move(*job));
    }
    for (auto& one : made) {
      if (!one.name.empty()) {
        if (auto st = fleet::check_name("name", one.name); !st) {
          return cli_fail(kExitUsage, fmt::format("{}: {}", sources[i], st.error().message));
        }
      }
      jobs.push_back(std::move(one));
    }
  }
  return jobs;
}

int run_fleet_submit(Context& ctx, fleet::ObjectStore& store, const FleetSubmitOptions& options,
                     bool json) {
  auto jobs = build_fleet_jobs(options, ctx.io(), ctx.io().wall_ms());
  if (!jobs) return ctx.report(jobs.error());
  if (!options.node.empty()) {
    auto target = fleet::resolve_node_target(store, options.node);
    if (!target) return report_fleet_error(ctx, target.error());
    if (auto pinned = pin_to_gpu(*jobs, *target, options.node); !pinned) return ctx.report(pinned.error());
  }
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
