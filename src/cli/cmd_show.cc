// SPDX-License-Identifier: Apache-2.0
// `gpuq show ID|NAME`: one job in full, with a table of its steps (docs/jobs.md, "Steps": each
// as the newest run that reached it left it, and the one running now) and of its runs: how each
// ended (and which job preempted it), the most GPU memory it was seen to use, and why its log may
// lack output.
// For an array's name: the array's summary (counts, when it ran, GPU-hours, failed elements).
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/format.h"

namespace gpuq::cli {
namespace {

std::string exit_text(const Json& run) {
  if (auto code = json_int(run, "exit_code")) return std::to_string(*code);
  if (auto signal = json_int(run, "signal")) return fmt::format("signal {}", *signal);
  return "-";
}

// "preempted by job 9"; for a run still going that a better job has asked to stop,
// "running, yielding to job 9" (yield) or "running, stopping for job 9" (restart).
std::string outcome_text(const Json& job, const Json& run) {
  std::string outcome = json_string(run, "outcome");
  auto by = json_int(run, "preempted_by");
  if (!by || *by == 0) return outcome;
  if (outcome == "preempted") return fmt::format("preempted by job {}", *by);
  if (outcome == "running") {
    bool yields = json_string(job, "preempt") == "yield";
    return fmt::format("running, {} job {}", yields ? "yielding to" : "stopping for", *by);
  }
  return outcome;
}

// "12.3 s" of CPU, with ", peak 512 MiB" of memory where the memory controller measured it.
std::string cpu_text(const Json& run) {
  if (!run.contains("cpu_seconds") || !run["cpu_seconds"].is_number()) return "-";
  std::string text = fmt::format("{:.1f} s", run["cpu_seconds"].get<double>());
  if (auto peak = json_int(run, "peak_memory_bytes")) text += ", peak " + format_mib(*peak >> 20);
  return text;
}

// Step `step`'s record in the run that last reached it (the runs' "steps"), or null.
const Json* step_record(const Json& job, const Json& step) {
  auto run = json_int(step, "run");
  auto index = json_int(step, "index");
  if (!run || !index) return nullptr;
  for (const auto& r : json_array(job, "runs")) {
    if (json_int(r, "number") != run) continue;
    for (const auto& s : json_array(r, "steps")) {
      if (json_int(s, "index") == index) return &s;
    }
  }
  return nullptr;
}

// A job's steps: each as the newest run that reached it left it; empty for a job without.
std::string render_steps(const Json& job, int64_t now_ms, bool color) {
  const Json& steps = json_array(job, "steps");
  if (steps.empty()) return "";
  Table table({"STEP", "NAME", "STATE", "STARTED", "DURATION", "EXIT", "RUN"});
  for (const auto& step : steps) {
    std::string state = json_string(step, "state");
    const Json* record = step_record(job, step);
    std::string duration =
        record ? span_duration(json_int(*record, "started_at_ms"), json_int(*record, "ended_at_ms"),
                               state == "running", now_ms)
               : "-";
    table.add_row({field_text(step, "index"), field_text(step, "name"),
                   Cell(state, state_style(state)), field_text(step, "started"), duration,
                   exit_text(step), field_text(step, "run")});
  }
  return table.render(color) + "\n";
}

// "1 (train.sh), running (steps 0 to 2)": the step running now; empty when none is.
std::string running_step_text(const Json& job) {
  auto now = json_int(job, "step");
  const Json& steps = json_array(job, "steps");
  if (!now || steps.empty()) return "";
  std::string name;
  for (const auto& step : steps) {
    if (json_int(step, "index") == now) name = json_string(step, "name");
  }
  return fmt::format("{}{}, running (steps 0 to {})", *now, name.empty() ? "" : " (" + name + ")",
                     steps.size() - 1);
}

std::string render_runs(const Json& job, int64_t now_ms, bool color) {
  const Json& runs = json_array(job, "runs");
  if (runs.empty()) return "no runs yet\n";
  // The memory column only when the daemon measured some, so older daemons' output is as it was.
  bool memory = false;
  for (const auto& run : runs) memory = memory || json_int(run, "peak_gpu_mem_mib").has_value();
  // Likewise CPU time and memory, only for runs contained by a cgroup (docs/containment.md).
  bool cpu = false;
  for (const auto& run : runs) cpu = cpu || (run.contains("cpu_seconds") && run["cpu_seconds"].is_number());
  std::vector<std::string> headers = {"RUN", "GPUS", "STARTED", "DURATION", "EXIT", "OUTCOME"};
  if (memory) headers.emplace_back("GPU MEMORY");
  if (cpu) headers.emplace_back("CPU");
  Table table(headers);
  for (const auto& run : runs) {
    std::string outcome = json_string(run, "outcome");
    std::vector<Cell> row = {field_text(run, "number"),
                             gpu_list(run.contains("gpus") ? run["gpus"] : Json()),
                             field_text(run, "started_at"),
                             run_duration(run, now_ms),
                             exit_text(run),
                             Cell(outcome_text(job, run), state_style(outcome))};
    if (memory) {
      auto peak = json_int(run, "peak_gpu_mem_mib");
      row.emplace_back(peak ? "peak " + format_mib(*peak) : "-");
    }
    if (cpu) row.emplace_back(cpu_text(run));
    table.add_row(std::move(row));
  }
  // Why a run's log may lack output (the disk filled, the log reached [runs] max_log).
  std::string notes;
  for (const auto& run : runs) {
    std::string note = json_string(run, "log_note");
    if (!note.empty()) notes += fmt::format("run {}: {}\n", field_text(run, "number"), note);
  }
  return table.render(color) + notes;
}

// "yield", "restart", "restart (only while a run is younger than 30m)"; empty for never.
std::string preempt_text(const Json& job) {
  std::string mode = json_string(job, "preempt");
  if (mode.empty() || mode == "never") return "";
  auto within = json_int(job, "restart_within_ms");
  if (mode == "restart" && within && *within > 0) {
    return fmt::format("restart (only while a run is younger than {})",
                       format_duration(Millis(*within)));
  }
  return mode;
}

// The job's own watcher limits ("quiet 20m, warn after 6h"); empty when it uses the defaults.
std::string watch_text(const Json& job) {
  std::string text;
  auto add = [&](const char* what, std::optional<int64_t> ms) {
    if (!ms) return;
    if (!text.empty()) text += ", ";
    text += *ms == 0 ? fmt::format("no {}", what) : fmt::format("{} {}", what, format_duration(Millis(*ms)));
  };
  add("requires-warn", json_int(job, "requires_warn_ms"));
  add("quiet", json_int(job, "quiet_ms"));
  add("warn after", json_int(job, "warn_after_ms"));
  return text;
}

// The footprint the daemon learned for a job that declares no --gpu-mem; empty when none.
std::string learned_memory_text(const Json& job) {
  auto it = job.find("gpu_mem_learned");
  if (it == job.end() || !it->is_object()) return "";
  auto mib = json_int(*it, "mib");
  auto runs = json_int(*it, "runs");
  if (!mib || !runs) return "";
  return fmt::format(
      "gpu memory: {} MiB learned from {} successful run{} (peak); declare --gpu-mem to "
      "override\n",
      *mib, *runs, *runs == 1 ? "" : "s");
}

std::string render_job(const Json& job, int64_t now_ms, bool color) {
  std::string state = json_string(job, "state");
  std::string submitted = field_text(job, "submitted_at");
  if (auto ms = json_int(job, "submitted_at_ms"); ms && *ms > 0) {
    submitted +=
        fmt::format(" ({} ago)", format_duration(Millis(std::max<int64_t>(0, now_ms - *ms))));
  }
  std::vector<std::pair<std::string, Cell>> lines = {
      {"id", field_text(job, "id")},
      {"name", name_or_dash(job)},
      {"state", Cell(state, state_style(state))},
  };
  if (!json_string(job, "reason").empty()) lines.emplace_back("reason", json_string(job, "reason"));
  if (std::string step = running_step_text(job); !step.empty()) lines.emplace_back("step", step);
  lines.emplace_back("priority", field_text(job, "priority"));
  lines.emplace_back("gpus", field_text(job, "gpus_requested"));
  if (std::string preempt = preempt_text(job); !preempt.empty()) {
    lines.emplace_back("preempt", preempt);
  }
  if (std::string watch = watch_text(job); !watch.empty()) lines.emplace_back("watch", watch);
  lines.emplace_back("command", field_text(job, "command"));
  lines.emplace_back("cwd", field_text(job, "cwd"));
  lines.emplace_back("submitted", submitted);
  lines.emplace_back("finished", field_text(job, "finished_at"));

  Table table({});
  for (auto& [key, value] : lines) table.add_row({key + ":", value});
  return table.render(color) + learned_memory_text(job) + "\n" + render_steps(job, now_ms, color) +
         render_runs(job, now_ms, color);
}

// A sweep's definition as given: "array 0-9%2", "grid lr=1e-4,3e-4 seed=0..4 (at most 2 at once)".
std::string sweep_text(const Json& array) {
  const Json& sweep = array.contains("sweep") ? array["sweep"] : Json::object();
  std::string text;
  if (sweep.is_object() && sweep.contains("array")) text = "array " + json_string(sweep, "array");
  if (sweep.is_object() && sweep.contains("grid")) {
    text = "grid";
    for (const auto& param : json_array(sweep, "grid")) text += " " + (param.is_string() ? param.get<std::string>() : param.dump());
  }
  if (text.empty()) text = sweep.dump();
  if (auto cap = json_int(array, "max_running")) text += fmt::format(" (at most {} at once)", *cap);
  return text;
}

// An element's end: its exit code, or the signal that ended it.
std::string element_exit(const Json& element) {
  if (auto code = json_int(element, "exit_code")) return std::to_string(*code);
  if (auto signal = json_int(element, "signal")) return fmt::format("signal {}", *signal);
  return "-";
}

// `gpuq show NAME` for an array or grid: counts by state, when it ran, GPU-hours, and the
// elements that failed with their exit codes.
std::string render_array(const Json& answer, bool color) {
  const Json& array = answer.contains("array") ? answer["array"] : Json::object();
  const Json& counts = answer.contains("counts") ? answer["counts"] : Json::object();
  const Json& usage = answer.contains("usage") ? answer["usage"] : Json::object();
  std::vector<std::string> by_state;
  for (const char* state : {"running", "pending", "held", "blocked", "succeeded", "failed",
                            "cancelled", "skipped"}) {
    if (auto n = json_int(counts, state); n && *n > 0) by_state.push_back(fmt::format("{} {}", *n, state));
  }
  std::string ran = "not yet";
  if (!json_string(usage, "first_start").empty()) {
    bool running = json_int(usage, "running").value_or(0) > 0;
    ran = fmt::format("from {} {}, {}", json_string(usage, "first_start"),
                      running ? "(running now)" : "to " + json_string(usage, "last_end"),
                      format_duration(Millis(json_int(usage, "wall_ms").value_or(0))));
  }
  double gpu_hours = usage.contains("gpu_hours") && usage["gpu_hours"].is_number() ? usage["gpu_hours"].get<double>() : 0.0;
  Table table({});
  table.add_row({"array:", fmt::format("{} (array {})", field_text(array, "name"), field_text(array, "id"))});
  table.add_row({"sweep:", sweep_text(array)});
  table.add_row({"elements:", fmt::format("{}: {}", field_text(array, "size"), fmt::join(by_state, ", "))});
  table.add_row({"submitted:", field_text(array, "submitted_at")});
  table.add_row({"ran:", ran});
  table.add_row({"gpu-hours:", fmt::format("{:.2f}", gpu_hours)});
  std::string out = table.render(color);
  Table failed({"ID", "NAME", "EXIT", "RUNS"});
  bool any = false;
  for (const auto& element : json_array(answer, "jobs")) {
    if (json_string(element, "state") != "failed") continue;
    failed.add_row({field_text(element, "id"), field_text(element, "name"), element_exit(element),
                    field_text(element, "runs")});
    any = true;
  }
  if (any) out += "\nfailed elements (gpuq retry " + field_text(array, "name") + " --failed):\n" + failed.render(color);
  return out;
}

}  // namespace

int run_show(Context& ctx, const ShowOptions& options) {
  auto response = ctx.client().get(job_path(options.ref));
  if (!response && response.error().code == "not_found") {
    // An array or grid (docs/sweeps.md): its summary.
    auto array = ctx.client().get("/v1/arrays/" + percent_encode(options.ref));
    if (array) {
      if (options.json) return print_body(ctx, array->body);
      auto answer = parse_json(array->body);
      if (!answer) return ctx.report(answer.error());
      ctx.out() << render_array(*answer, ctx.color());
      return kExitOk;
    }
  }
  if (!response) return ctx.report(response.error());
  if (options.json) return print_body(ctx, response->body);
  auto job = parse_json(response->body);
  if (!job) return ctx.report(job.error());
  ctx.out() << render_job(*job, ctx.io().wall_ms(), ctx.color());
  return kExitOk;
}

}  // namespace gpuq::cli
