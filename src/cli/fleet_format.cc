#include "cli/fleet_format.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/duration.h"
#include "cli/table.h"

namespace gpuq::cli {
namespace {

Json text_or_null(const std::string& text) { return text.empty() ? Json() : Json(text); }

std::string or_dash(const std::string& text) { return text.empty() ? "-" : text; }

std::string node_state(const fleet::NodeStatus& node) {
  std::vector<std::string> words;
  if (!node.has_heartbeat) words.emplace_back("no heartbeat");
  else if (node.stale) words.emplace_back("stale");
  if (node.draining) words.emplace_back("draining");
  return words.empty() ? "up" : fmt::format("{}", fmt::join(words, ", "));
}

// "queues/class/any/" → "class any"; "ended/" → "ended".
std::string queue_label(const std::string& queue) {
  for (auto [base, word] : {std::pair{fleet::keys::kClassQueues, "class"},
                            std::pair{fleet::keys::kNodeQueues, "node"}}) {
    if (queue.starts_with(base) && queue.size() > base.size()) {
      return fmt::format("{} {}", word, queue.substr(base.size(), queue.size() - base.size() - 1));
    }
  }
  return queue == fleet::keys::kEnded ? "ended" : or_dash(queue);
}

}  // namespace

Json to_cli_json(const nlohmann::json& value) {
  Json converted = Json::parse(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                               nullptr, false);
  return converted.is_discarded() ? Json() : converted;
}

Json fleet_job_json(const fleet::FleetJob& job) {
  Json full = to_cli_json(fleet::to_json(job));
  Json ordered = Json::object();
  for (const char* key : {"id", "name", "class", "node", "submitted_ms", "submitted_by", "after"}) {
    if (full.contains(key)) ordered[key] = full[key];
  }
  ordered["spec"] = full.contains("spec") ? full["spec"] : Json::object();
  return ordered;
}

Json node_status_json(const fleet::NodeStatus& node) {
  Json out = Json::object();
  out["name"] = node.name;
  out["stale"] = node.stale;
  out["heartbeat_age_s"] = node.heartbeat_age_ms < 0 ? Json() : Json(node.heartbeat_age_ms / 1000.0);
  out["gpus"] = node.gpus;
  out["free_gpus"] = node.free_gpus;
  out["classes"] = node.classes;
  out["running"] = node.running;
  out["draining"] = node.draining;
  out["version"] = text_or_null(node.version);
  return out;
}

Json job_status_json(const fleet::JobStatus& job) {
  Json out = Json::object();
  out["id"] = job.id;
  out["name"] = text_or_null(job.name);
  out["state"] = job.state;
  out["class"] = text_or_null(job.klass);
  out["node"] = text_or_null(job.node);
  out["runs"] = job.runs;
  out["exit_code"] = job.exit_code ? Json(*job.exit_code) : Json();
  out["attempt"] = job.attempt;
  out["queue"] = job.queue;
  out["priority"] = job.priority;
  out["submitted_ms"] = job.submitted_ms;
  out["ended_ms"] = job.ended_ms > 0 ? Json(job.ended_ms) : Json();
  out["cancel_requested"] = job.cancel_requested;
  out["reason"] = text_or_null(job.reason);
  return out;
}

std::string render_fleet_nodes(const std::vector<fleet::NodeStatus>& nodes, bool color) {
  if (nodes.empty()) return "no nodes yet: start one with gpuq daemon --fleet URL --node NAME\n";
  Table table({"NODE", "AGE", "GPUS", "CLASSES", "RUNNING", "STATE"});
  for (const auto& node : nodes) {
    std::string state = node_state(node);
    Style style = state == "up" ? Style::kGreen : node.stale ? Style::kRed : Style::kYellow;
    table.add_row({node.name,
                   node.heartbeat_age_ms < 0 ? "-" : format_duration(Millis(node.heartbeat_age_ms)),
                   fmt::format("{}/{}", node.free_gpus, node.gpus),
                   node.classes.empty() ? "-" : fmt::format("{}", fmt::join(node.classes, ",")),
                   std::to_string(node.running.size()), Cell(state, style)});
  }
  return table.render(color);
}

std::string render_fleet_jobs(const std::vector<fleet::JobStatus>& jobs, bool color) {
  if (jobs.empty()) return "no fleet jobs\n";
  Table table({"ID", "NAME", "STATE", "QUEUE", "NODE", "RUNS", "EXIT"});
  for (const auto& job : jobs) {
    std::string state = job.cancel_requested && job.state == fleet::kRunning ? "cancelling" : job.state;
    table.add_row({job.id, or_dash(job.name), Cell(state, state_style(job.state)),
                   queue_label(job.queue), or_dash(job.node), std::to_string(job.runs),
                   job.exit_code ? std::to_string(*job.exit_code) : "-"});
  }
  return table.render(color);
}

}  // namespace gpuq::cli
