// SPDX-License-Identifier: Apache-2.0
// `gpuq simulate PLAN.json --gpus N` and `gpuq simulate --trace FILE.csv --gpus N`: replays a
// plan or a trace with the daemon's scheduler on a virtual clock (src/sim) and prints when each
// job would start and end, or the summary of a trace. No daemon is needed, but the machine is
// described as the daemon would see it: the lanes and scheduler policy of config.toml (--config
// FILE, else the home's config.toml when it exists).
#include <fmt/format.h>

#include <optional>

#include "base/heap.h"
#include "cli/commands.h"
#include "config/config.h"
#include "cli/simulate_plan.h"
#include "cli/submit_env.h"
#include "sim/report.h"
#include "sim/simulate.h"
#include "sim/trace.h"
#include "spec/plan.h"

namespace gpuq::cli {
namespace {

// The scheduler's policies by name (docs/scheduling.md); nullopt when unknown.
std::optional<sched::Policy> policy_named(std::string_view name) {
  if (name == "fifo") return sched::Policy::kFifo;
  if (name == "priority") return sched::Policy::kPriority;
  if (name == "backfill") return sched::Policy::kBackfill;
  return std::nullopt;
}

template <class J>
std::string json_dump(const J& value) {
  return value.dump(-1, ' ', false, J::error_handler_t::replace);
}

int print_text(Context& ctx, const std::string& text) {
  ctx.out() << text;
  if (text.empty() || text.back() != '\n') ctx.out() << '\n';
  return kExitOk;
}

int simulate_jobs(Context& ctx, const SimulateOptions& options, const config::Config& config,
                  const std::vector<sim::SimJob>& jobs, const sim::SimMachine& machine,
                  bool with_jobs) {
  std::string_view policy = options.policy.empty() ? config.policy : options.policy;
  auto result = sim::simulate(jobs, machine, policy_named(policy).value_or(sched::Policy::kBackfill));
  if (!result) return ctx.report(kExitFailed, result.error().message);
  if (options.json) return print_text(ctx, json_dump(sim::result_to_json(*result, with_jobs)));
  return print_text(ctx, sim::format_result_table(*result, with_jobs));
}

// config.toml as the daemon of this home would read it, or the file --config names (relative
// to the current directory), which must exist.
Outcome<config::Config> simulation_config(const Context& ctx, const SimulateOptions& options) {
  Result<config::Config> loaded;
  if (options.config.empty()) {
    loaded = config::load_config(ctx.home() + "/" + std::string(config::kConfigFileName));
  } else {
    std::string path = options.config;
    if (!path.starts_with("/") && !ctx.io().cwd.empty()) path = ctx.io().cwd + "/" + path;
    loaded = config::load_config(path, config::IfMissing::kError);
  }
  if (!loaded) return cli_fail(kExitUsage, loaded.error().message);
  return std::move(*loaded);
}

}  // namespace

int run_simulate(Context& ctx, const SimulateOptions& options) {
  if (options.plan.empty() == options.trace.empty()) {
    return ctx.report(kExitUsage,
                      "simulate: give a plan (gpuq simulate PLAN.json --gpus N) or a trace "
                      "(gpuq simulate --trace FILE.csv --gpus N), not both");
  }
  if (!options.gpus) return ctx.report(kExitUsage, "simulate: say how many GPUs with --gpus N");
  if (*options.gpus < 0) {
    return ctx.report(kExitUsage, fmt::format("--gpus must be 0 or more, not {}", *options.gpus));
  }
  if (!options.policy.empty() && !policy_named(options.policy)) {
    return ctx.report(kExitUsage, fmt::format("bad --policy '{}': use fifo, priority or backfill",
                                              options.policy));
  }
  auto config = simulation_config(ctx, options);
  if (!config) return ctx.report(config.error());
  // A large plan or trace becomes many small objects at once (base/heap.h).
  prepare_heap_for_file(options.trace.empty() ? options.plan : options.trace);
  if (!options.trace.empty()) {
    auto jobs = sim::read_trace_csv(options.trace);
    if (!jobs) return ctx.report(kExitUsage, jobs.error().message);
    return simulate_jobs(ctx, options, *config, *jobs, simulation_machine(*options.gpus, *config), false);
  }
  // The plan's jobs as specs, not JSON: nothing is copied per job, and no request is kept. No
  // environment is given, since a simulation runs nothing (the jobs' own "env" entries are
  // still checked).
  spec::PlanContext context{ctx.io().cwd, {}};
  context.shell = environment_map(ctx.io().environ);  // for ~ and $NAME in the plan's paths
  context.keep_request = false;                       // nothing is sent
  auto plan = spec::load_plan(options.plan, context);
  if (!plan) return ctx.report(kExitUsage, plan.error().message);
  for (const auto& warning : plan->warnings) ctx.err() << warning.text() << '\n';
  auto simulation = plan_simulation(*plan, *options.gpus, *config);
  if (!simulation) return ctx.report(kExitUsage, simulation.error().message);
  return simulate_jobs(ctx, options, *config, simulation->jobs, simulation->machine, true);
}

}  // namespace gpuq::cli
