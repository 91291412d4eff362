// SPDX-License-Identifier: Apache-2.0
#include "store/rows.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/spec_json.h"
#include "store/codec.h"

namespace gpuq::store {

EncodedSpec encode_spec_with_eta(const JobSpec& spec) {
  nlohmann::json j = spec_to_json(spec);
  nlohmann::json eta = nlohmann::json::array();
  for (const char* key : {"est_ms", "timeout_ms", "not_before_ms", "deps", "lanes", "gpu_mem", "share"}) {
    auto it = j.find(key);
    eta.push_back(it == j.end() ? nlohmann::json(nullptr) : *it);
  }
  return {j.dump(), eta.dump()};
}

Status write_spec_apart(Database& db, int64_t job_id, const std::string& spec) {
  if (!spec_kept_apart(spec)) {
    auto removed = db.prepare("DELETE FROM job_specs WHERE id = ?");
    if (!removed) return tl::unexpected(removed.error());
    return removed->bind(1, job_id).run();
  }
  auto written = db.prepare("INSERT OR REPLACE INTO job_specs(id, spec) VALUES (?, ?)");
  if (!written) return tl::unexpected(written.error());
  return written->bind(1, job_id).bind(2, spec).run();
}

Result<Job> job_from_row(const Statement& row) {
  Job job;
  job.id = row.int64(0);
  auto state = parse_job_state(row.text(2));
  if (!state) return tl::unexpected(state.error());
  job.state = *state;
  auto spec = decode_spec(row.text(6));
  if (!spec) return tl::unexpected(spec.error());
  job.spec = std::move(*spec);
  job.spec.name = row.is_null(1) ? "" : row.text(1);
  job.spec.priority = static_cast<int>(row.int64(3));
  job.queue_order = row.int64(4);
  job.spec.gpus = static_cast<int>(row.int64(5));
  job.reason = row.text(7);
  job.submitted_at_ms = row.int64(8);
  job.finished_at_ms = row.is_null(9) ? 0 : row.int64(9);
  job.lost_count = static_cast<int>(row.int64(10));
  job.retry_at_ms = row.int64(11);
  job.retry_base = static_cast<int>(row.int64(12));
  job.conditions_false_since_ms = row.int64(13);
  job.spec.user = row.text(14);
  job.array_id = row.is_null(15) ? 0 : row.int64(15);
  job.steps_from_start = row.int64(16) != 0;
  if (!row.is_null(17)) {
    // The array's shared environment under the element's own variables (which win).
    nlohmann::json shared = nlohmann::json::parse(row.text(17), nullptr, false);
    if (!shared.is_object()) return fail(Code::kCorruption, "an array's stored environment is not a JSON object");
    for (const auto& [key, value] : shared.items()) {
      if (value.is_string()) job.spec.env.emplace(key, value.get<std::string>());
    }
  }
  return job;
}

Result<Job> job_from_row_without_env(const Statement& row) {
  auto job = job_from_row(row);
  if (job) job->spec.env.clear();
  return job;
}

namespace {
// The length above which a single job's spec has its environment removed by SQLite.
constexpr size_t kEnvRemovedAboveBytes = 512;
}  // namespace

const std::string& job_columns(bool with_env) {
  static const std::string kWithout = [] {
    std::string columns = kJobColumns;
    const std::string stored = kStoredSpec;
    // SQLite's json_remove parses and renders the whole spec: it pays only where the environment
    // is most of a long spec (a submit's captured environment is 1-2 KiB). An element's row keeps
    // only its own variables, and a short spec holds a short environment, a few bytes to decode:
    // there the JSON work would cost more than it saves (a sixth of a restart with a million
    // elements; as much with a million single jobs of 100-byte specs), so the reader drops them
    // (job_from_row_without_env). A spec kept apart (jobs.spec empty) is long.
    columns.replace(columns.find(stored), stored.size(),
                    fmt::format("CASE WHEN array_id IS NULL AND (spec = '' OR length(spec) > {}) "
                                "THEN json_remove({}, '$.env') ELSE {} END",
                                kEnvRemovedAboveBytes, stored, stored));
    columns.replace(columns.find(", (SELECT json_extract(base"), std::string::npos, ", NULL");
    return columns;
  }();
  static const std::string kWith = kJobColumns;
  return with_env ? kWith : kWithout;
}

Result<Run> run_from_row(const Statement& row) {
  Run run;
  run.id = row.int64(0);
  run.job_id = row.int64(1);
  run.number = static_cast<int>(row.int64(2));
  run.gpus = decode_strings(row.text(3));
  run.gpu_indices = decode_ints(row.text(4));
  run.shim_pid = static_cast<int>(row.int64(5));
  run.shim_start_ticks = static_cast<uint64_t>(row.int64(6));
  run.started_at_ms = row.int64(7);
  run.ended_at_ms = row.is_null(8) ? 0 : row.int64(8);
  if (!row.is_null(9)) run.exit_code = static_cast<int>(row.int64(9));
  if (!row.is_null(10)) run.signal = static_cast<int>(row.int64(10));
  auto outcome = parse_run_outcome(row.text(11));
  if (!outcome) return tl::unexpected(outcome.error());
  run.outcome = *outcome;
  run.run_dir = row.text(12);
  auto stop = parse_stop_reason(row.text(13));
  if (!stop) return tl::unexpected(stop.error());
  run.stop_reason = *stop;
  if (!row.is_null(14)) run.verified = row.int64(14) != 0;
  run.run_id = row.text(15);
  if (!row.is_null(16)) run.peak_gpu_mem_mib = row.int64(16);
  run.preempted_by = row.int64(17);
  run.preempt_deadline_ms = row.int64(18);
  run.boot_id = row.text(19);
  run.log_note = row.text(20);
  run.seen_gpus = decode_strings(row.text(21));
  run.seen_gpu_indices = decode_ints(row.text(22));
  if (!row.is_null(23)) run.cpu_usec = row.int64(23);
  if (!row.is_null(24)) run.peak_memory_bytes = row.int64(24);
  run.first_step = static_cast<int>(row.int64(25));
  if (std::string steps = row.text(26); steps != "[]") {
    auto decoded = decode_step_runs(steps);
    if (!decoded) return tl::unexpected(decoded.error());
    run.steps = std::move(*decoded);
  }
  return run;
}

}  // namespace gpuq::store
