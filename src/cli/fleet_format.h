// How `gpuq fleet` shows the fleet: the JSON of its --json output (docs/fleet.md, "Commands")
// and the tables of `gpuq fleet status`. Pure functions over the fleet client's values;
// thread-safe.
#pragma once

#include <vector>

#include "cli/daemon_client.h"
#include "fleet/client.h"

namespace gpuq::cli {

// A fleet document as the CLI prints it (keys in the order the fleet wrote them).
Json to_cli_json(const nlohmann::json& value);

// spec.json as stored: id, name, class, node, submitted_ms, submitted_by, after, spec.
Json fleet_job_json(const fleet::FleetJob& job);

// `fleet status --json`: {"name", "stale", "heartbeat_age_s", "gpus", "free_gpus", "classes",
// "running", "draining", "version"}; heartbeat_age_s is null when the store gave no time.
Json node_status_json(const fleet::NodeStatus& node);
// {"id", "name", "state", "class", "node", "runs", "exit_code", "attempt", "queue", "priority",
// "submitted_ms", "ended_ms", "cancel_requested", "reason"}; empty texts are null.
Json job_status_json(const fleet::JobStatus& job);

// The tables of `fleet status`, each ending in '\n'.
std::string render_fleet_nodes(const std::vector<fleet::NodeStatus>& nodes, bool color);
std::string render_fleet_jobs(const std::vector<fleet::JobStatus>& jobs, bool color);

}  // namespace gpuq::cli
