// SPDX-License-Identifier: Apache-2.0
#include "cli/fleet_format.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/duration.h"
#include "cli/format.h"
#include "cli/table.h"

namespace gpuq::cli {
namespace {

Json text_or_null(const std::string& text) { return text.empty() ? Json() : Json(text); }

Json known_or_null(int64_t value) { return value < 0 ? Json() : Json(value); }

std::string bytes_or_dash(int64_t bytes) { return bytes < 0 ? "-" : format_bytes(bytes); }

// Why a node's row needs a second look: short of disk, or taking no jobs for a reason it gave.
std::string node_warning(const fleet::NodeStatus& node) {
  if (!node.not_taking.empty()) return fmt::format("node {} takes no new jobs: {}", node.name, node.not_taking);
  if (node.low_disk) {
    return fmt::format("node {}: its workdir has {} free, under its min_free_disk {}", node.name,
                       format_bytes(node.workdir_free_bytes), format_bytes(node.min_free_disk_bytes));
  }
  return "";
}

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
  Json gpus = Json::array();
  for (const auto& gpu : node.gpu_list) {
    gpus.push_back({{"name", gpu.name}, {"model", text_or_null(gpu.model)}, {"memory_mib", gpu.memory_mib},
                    {"memory_used_mib", known_or_null(gpu.memory_used_mib)},
                    {"utilization", known_or_null(gpu.utilization)}, {"busy", gpu.busy}});
  }
  out["gpu_usage"] = std::move(gpus);
  out["workdir_free_bytes"] = known_or_null(node.workdir_free_bytes);
  out["shm_free_bytes"] = known_or_null(node.shm_free_bytes);
  out["min_free_disk_bytes"] = node.min_free_disk_bytes;
  out["low_disk"] = node.low_disk;
  out["not_taking"] = text_or_null(node.not_taking);
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
  out["gpus"] = job.gpus;
  out["gpu"] = job.gpu ? Json(*job.gpu) : Json();
  return out;
}

Json fleet_status_json(const fleet::FleetStatus& status) {
  Json out = {{"nodes", Json::array()}, {"jobs", Json::array()}, {"queues", Json::array()}};
  for (const auto& node : status.nodes) out["nodes"].push_back(node_status_json(node));
  for (const auto& job : status.jobs) out["jobs"].push_back(job_status_json(job));
  for (const auto& queue : status.queues) {
    out["queues"].push_back({{"queue", queue.queue}, {"entries", queue.entries}, {"shown", queue.shown}});
  }
  out["not_shown"] = status.not_shown;
  return out;
}

std::string render_fleet_nodes(const std::vector<fleet::NodeStatus>& nodes, bool color) {
  if (nodes.empty()) return "no nodes yet: start one with gpuq daemon --fleet URL --node NAME\n";
  Table table({"NODE", "AGE", "GPUS", "CLASSES", "RUNNING", "WORKDIR FREE", "SHM FREE", "STATE"});
  std::string warnings;
  for (const auto& node : nodes) {
    std::string state = node_state(node);
    Style style = state == "up" ? Style::kGreen : node.stale ? Style::kRed : Style::kYellow;
    table.add_row({node.name,
                   node.heartbeat_age_ms < 0 ? "-" : format_duration(Millis(node.heartbeat_age_ms)),
                   fmt::format("{}/{}", node.free_gpus, node.gpus),
                   node.classes.empty() ? "-" : fmt::format("{}", fmt::join(node.classes, ",")),
                   std::to_string(node.running.size()),
                   Cell(bytes_or_dash(node.workdir_free_bytes), node.low_disk ? Style::kRed : Style::kPlain),
                   bytes_or_dash(node.shm_free_bytes), Cell(state, style)});
    if (std::string warning = node_warning(node); !warning.empty()) warnings += "warning: " + warning + "\n";
  }
  return table.render(color) + warnings;
}

std::string render_fleet_gpus(const std::vector<fleet::NodeStatus>& nodes) {
  bool known = false;
  for (const auto& node : nodes) {
    for (const auto& gpu : node.gpu_list) known = known || gpu.utilization >= 0 || gpu.memory_used_mib >= 0;
  }
  if (!known) return "";  // heartbeats of older nodes say nothing of use
  Table table({"NODE", "GPU", "MODEL", "UTIL", "MEMORY USED", "BUSY"});
  for (const auto& node : nodes) {
    for (const auto& gpu : node.gpu_list) {
      table.add_row({node.name, gpu.name, or_dash(gpu.model),
                     gpu.utilization < 0 ? "-" : fmt::format("{}%", gpu.utilization),
                     gpu.memory_used_mib < 0 ? "-"
                                             : fmt::format("{} / {}", format_mib(gpu.memory_used_mib),
                                                           format_mib(gpu.memory_mib)),
                     gpu.busy ? "yes" : "no"});
    }
  }
  return table.render(false);
}

std::string render_fleet_jobs(const fleet::FleetStatus& status, bool color) {
  if (status.jobs.empty() && status.not_shown == 0) return "no fleet jobs\n";
  Table table({"ID", "NAME", "STATE", "QUEUE", "NODE", "GPUS", "RUNS", "EXIT"});
  for (const auto& job : status.jobs) {
    std::string state = job.cancel_requested && job.state == fleet::kRunning ? "cancelling" : job.state;
    std::string node = or_dash(job.node);
    if (job.gpu) node += fmt::format(" gpu{}", *job.gpu);
    table.add_row({job.id, or_dash(job.name), Cell(state, state_style(job.state)),
                   queue_label(job.queue), node, std::to_string(job.gpus), std::to_string(job.runs),
                   job.exit_code ? std::to_string(*job.exit_code) : "-"});
  }
  std::string more;
  for (const auto& queue : status.queues) {
    if (queue.shown == queue.entries) continue;
    more += fmt::format("... and {} more in {} ({} entries)\n", format_count(static_cast<int64_t>(queue.entries - queue.shown)),
                        queue_label(queue.queue), format_count(static_cast<int64_t>(queue.entries)));
  }
  if (!more.empty()) more += "(the best waiting jobs are shown; --all shows every one, --limit N the best N)\n";
  return (status.jobs.empty() ? std::string() : table.render(color)) + more;
}

}  // namespace gpuq::cli
