// SPDX-License-Identifier: Apache-2.0
#include "config/config_tables.h"

#include <algorithm>

namespace gpuq::config {

const std::vector<TableSpec>& table_specs() {
  static const std::vector<TableSpec> kSpecs = {
      {"scheduler", {"policy", "backfill_unknown_limit"}},
      {"retries", {"delay", "backoff", "max_delay"}},
      {"runs",
       {"kill_grace", "requires_timeout", "requires_poll", "requires_poll_max", "max_log",
        "max_not_started"}},
      {"retention", {"keep"}},
      {"preemption", {"gap", "yield_grace"}},
      {"cleanup", {"poll", "limit"}},
      {"gpu", {"probe_interval", "foreign_repeat", "foreign_memory_mib"}},
      {"fleet",
       {"url", "node", "classes", "heartbeat", "poll", "lease", "sync_every", "timeout", "workdir",
        "min_free_disk", "part_size", "transfers", "data", "endpoint", "region", "access_key_id", "secret_access_key", "session_token"}},
      {"watch",
       {"interval", "repeat", "heartbeat", "requires_warn", "quiet", "overdue_factor", "gpu_idle",
        "gpu_idle_utilization", "idle_with_work", "empty"}},
      {"http", {"listen", "allowed_hosts", "allow_submit"}}, {"cgroup", {"root"}},
      {"sweeps", {"max_elements"}},
      {"containers", {"runtime", "extra_args"}},
      // Its keys are checked by config_users.cc, which also reads its [users.LOGIN] tables.
      {"users",
       {"group", "admins", "fair_share", "fair_share_half_life", "max_gpus", "max_running",
        "max_queued"}},
  };
  return kSpecs;
}

const std::string_view kKnownTables =
    "[lanes.NAME], [scheduler], [retries], [runs], [retention], [preemption], [cleanup], [gpu], "
    "[watch], [fleet], [http], [cgroup], [sweeps], [containers], [users], [[hook]]";

bool contains(const std::vector<std::string_view>& words, std::string_view word) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

const TableSpec& spec_named(std::string_view name) {
  return *std::find_if(table_specs().begin(), table_specs().end(),
                       [&](const TableSpec& spec) { return spec.name == name; });
}

// The table that knows `key`, for hints about a setting written in the wrong place.
const TableSpec* table_with_key(std::string_view key) {
  for (const TableSpec& spec : table_specs()) {
    if (contains(spec.keys, key)) return &spec;
  }
  return nullptr;
}

}  // namespace gpuq::config
