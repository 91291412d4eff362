// SPDX-License-Identifier: Apache-2.0
// Internal to src/store: how the jobs and runs tables are read into Job and Run and how a spec
// is written, shared by the store's files (store.cc: writes, store_job_reads.cc: job and run
// reads, and the queries of the other store_*.cc). The column lists and the row readers go
// together: job_from_row reads the columns of kJobColumns (or job_columns()) in their order,
// run_from_row those of kRunColumns. Pure functions of a statement's current row.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "model/job.h"
#include "store/sqlite.h"

namespace gpuq::store {

// Where a job's spec is kept (schema 18). One longer than kInlineSpecMaxBytes is kept apart
// from its job's row, in job_specs, with jobs.spec '': inline it would make the row spill into
// overflow pages, which SQLite writes again whenever a change resizes the row (the state change
// that ends a job wrote a 64 KiB script's 16 pages again). A shorter one stays in the row, read
// without another lookup (a restart reads a million of them). kStoredSpec reads either.
inline constexpr size_t kInlineSpecMaxBytes = 2048;
inline constexpr const char* kStoredSpec =
    "COALESCE(NULLIF(spec, ''), (SELECT spec FROM job_specs WHERE job_specs.id = jobs.id))";
inline constexpr const char* kJobColumns =
    "id, name, state, priority, queue_order, gpus, "
    "COALESCE(NULLIF(spec, ''), (SELECT spec FROM job_specs WHERE job_specs.id = jobs.id)), "
    "reason, submitted_at, finished_at, "
    "lost_count, retry_at, retry_base, conditions_false_since, user, array_id, steps_from_start, "
    // An element of an array keeps only its own variables (docs/sweeps.md): the environment
    // every element shares is its array's, kept once in arrays.base.
    "(SELECT json_extract(base, '$.env') FROM arrays WHERE arrays.id = jobs.array_id)";
inline constexpr const char* kRunColumns =
    "id, job_id, number, gpus, gpu_indices, shim_pid, shim_start_ticks, started_at, ended_at, "
    "exit_code, signal, outcome, run_dir, stop_reason, verified, run_id, peak_gpu_mem_mib, "
    "preempted_by, preempt_deadline, boot_id, log_note, seen_gpus, seen_gpu_indices, cpu_usec, "
    "peak_memory_bytes, first_step, steps";

// The stored spec and, beside it, the fields of it an ETA reads (jobs.eta, schema 13): the list
// json_extract(spec, '$.est_ms', '$.timeout_ms', '$.not_before_ms', '$.deps', '$.lanes',
// '$.gpu_mem', '$.share') answers, made from the same JSON without parsing it again.
struct EncodedSpec {
  std::string spec;
  std::string eta;
};
EncodedSpec encode_spec_with_eta(const JobSpec& spec);
// What jobs.spec holds for `spec`: the spec, or '' when it is kept in job_specs.
inline bool spec_kept_apart(const std::string& spec) { return spec.size() > kInlineSpecMaxBytes; }
// Inside a transaction, after the job's row is written with jobs.spec as spec_kept_apart says:
// job_specs holds the spec when it is kept apart, and nothing for the job otherwise.
Status write_spec_apart(Database& db, int64_t job_id, const std::string& spec);

// A job from a row of kJobColumns, its runs left empty.
Result<Job> job_from_row(const Statement& row);
// A job from a row of job_columns(false), its runs left empty and spec.env empty.
Result<Job> job_from_row_without_env(const Statement& row);

// kJobColumns, or without `with_env` the same with no array's environment joined and a job's
// own environment removed by SQLite (an element's few variables are left to
// job_from_row_without_env): the environment is most of a spec's text (and of its decoding).
const std::string& job_columns(bool with_env);

// A run from a row of kRunColumns.
Result<Run> run_from_row(const Statement& row);

// Every row of `stmt`, each made into a T by from_row; the first error stops it.
template <class T, class Fn>
Result<std::vector<T>> collect(Statement& stmt, Fn&& from_row) {
  std::vector<T> out;
  while (true) {
    auto row = stmt.step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    auto value = from_row(stmt);
    if (!value) return tl::unexpected(value.error());
    out.push_back(std::move(*value));
  }
  return out;
}

}  // namespace gpuq::store
