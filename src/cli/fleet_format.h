// SPDX-License-Identifier: Apache-2.0
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
// "running", "draining", "version", "gpu_usage": [{"name", "model", "memory_mib",
// "memory_used_mib", "utilization", "busy"}], "workdir_free_bytes", "shm_free_bytes",
// "min_free_disk_bytes", "low_disk", "not_taking"}; heartbeat_age_s and what the heartbeat
// does not say (an older node's) are null.
Json node_status_json(const fleet::NodeStatus& node);
// {"id", "name", "state", "class", "node", "runs", "exit_code", "attempt", "queue", "priority",
// "submitted_ms", "ended_ms", "cancel_requested", "reason", "gpus", "gpu"}; empty texts are null.
Json job_status_json(const fleet::JobStatus& job);
// The whole of `fleet status --json` (and the dashboard's /v1/fleet): {"nodes", "jobs",
// "queues": [{"queue", "entries", "shown"}], "not_shown"}.
Json fleet_status_json(const fleet::FleetStatus& status);

// The tables of `fleet status`, each ending in '\n': the nodes (with a warning line for each
// node short of disk or taking no jobs), their GPUs' use (when the heartbeats say it), the jobs
// (with a line per queue whose entries were not all shown).
std::string render_fleet_nodes(const std::vector<fleet::NodeStatus>& nodes, bool color);
std::string render_fleet_gpus(const std::vector<fleet::NodeStatus>& nodes);
std::string render_fleet_jobs(const fleet::FleetStatus& status, bool color);

}  // namespace gpuq::cli
