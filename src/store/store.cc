// SPDX-License-Identifier: Apache-2.0
#include "store/store.h"

#include <fmt/format.h>
#include <unordered_map>

#include "model/spec_json.h"
#include "store/codec.h"
#include "store/schema.h"
#include "base/time.h"

namespace gpuq::store {
namespace {

constexpr const char* kJobColumns =
    "id, name, state, priority, queue_order, gpus, spec, reason, submitted_at, finished_at, "
    "lost_count, retry_at, retry_base, conditions_false_since, user, array_id, steps_from_start, "
    // An element of an array keeps only its own variables (docs/sweeps.md): the environment
    // every element shares is its array's, kept once in arrays.base.
    "(SELECT json_extract(base, '$.env') FROM arrays WHERE arrays.id = jobs.array_id)";
constexpr const char* kRunColumns =
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
EncodedSpec encode_spec_with_eta(const JobSpec& spec) {
  nlohmann::json j = spec_to_json(spec);
  nlohmann::json eta = nlohmann::json::array();
  for (const char* key : {"est_ms", "timeout_ms", "not_before_ms", "deps", "lanes", "gpu_mem", "share"}) {
    auto it = j.find(key);
    eta.push_back(it == j.end() ? nlohmann::json(nullptr) : *it);
  }
  return {j.dump(), eta.dump()};
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

// kJobColumns, or without `with_env` the same with the spec's environment removed by SQLite
// and no array's joined: the environment is most of a spec's text (and of its decoding).
const std::string& job_columns(bool with_env) {
  static const std::string kWithout = [] {
    std::string columns = kJobColumns;
    columns.replace(columns.find(", spec,"), 7, ", json_remove(spec, '$.env'),");
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

}  // namespace

std::string_view to_string(CleanupState state) {
  switch (state) {
    case CleanupState::kPending: return "pending";
    case CleanupState::kAttention: return "attention";
    case CleanupState::kReleased: return "released";
    case CleanupState::kDone: break;
  }
  return "done";
}

Result<std::unique_ptr<Store>> Store::open(const std::string& path, bool read_only) {
  auto db = Database::open(path, read_only);
  if (!db) return tl::unexpected(db.error());
  if (!read_only) {
    if (auto migrated = migrate(**db); !migrated) return tl::unexpected(migrated.error());
  }
  return std::unique_ptr<Store>(new Store(std::move(*db)));
}

Status Store::transaction(const std::function<Status()>& fn) { return in_transaction(*db_, fn); }

// finished_at is written when the job has one: a history imported as it was (the daemon
// inserts pending or held jobs only). array_id 0 (a job alone) is written as NULL; an id that
// names no array is refused by the foreign key: insert_array() first, in the same transaction.
Result<int64_t> Store::insert_job(const Job& job) {
  auto stmt = db_->prepare(
      "INSERT INTO jobs(name, state, priority, queue_order, gpus, spec, reason, submitted_at, "
      "lost_count, finished_at, user, array_id, eta) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  if (!stmt) return tl::unexpected(stmt.error());
  if (job.spec.name.empty()) {
    stmt->bind_null(1);
  } else {
    stmt->bind(1, job.spec.name);
  }
  EncodedSpec encoded = encode_spec_with_eta(job.spec);
  stmt->bind(2, to_string(job.state))
      .bind(3, job.spec.priority)
      .bind(4, job.queue_order)
      .bind(5, job.spec.gpus)
      .bind(6, encoded.spec)
      .bind(7, job.reason)
      .bind(8, job.submitted_at_ms)
      .bind(9, job.lost_count)
      .bind(10, job.finished_at_ms ? std::optional<int64_t>(job.finished_at_ms) : std::nullopt)
      .bind(11, job.spec.user)
      .bind(12, job.array_id ? std::optional<int64_t>(job.array_id) : std::nullopt)
      .bind(13, encoded.eta);
  if (auto st = stmt->run(); !st) return tl::unexpected(st.error());
  return db_->last_insert_rowid();
}

Status Store::set_job_state(int64_t job_id, JobState state, const std::string& reason,
                            std::optional<int64_t> finished_at_ms) {
  auto stmt = db_->prepare("UPDATE jobs SET state = ?, reason = ?, finished_at = ? WHERE id = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  return stmt->bind(1, to_string(state)).bind(2, reason).bind(3, finished_at_ms).bind(4, job_id).run();
}

Status Store::set_lost_count(int64_t job_id, int lost_count) {
  auto stmt = db_->prepare("UPDATE jobs SET lost_count = ? WHERE id = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  return stmt->bind(1, lost_count).bind(2, job_id).run();
}

Result<int64_t> Store::insert_run(const Run& run, const std::string& job_name) {
  auto stmt = db_->prepare(
      "INSERT INTO runs(job_id, number, gpus, gpu_indices, shim_pid, shim_start_ticks, "
      "started_at, outcome, run_dir, run_id, job_name, cleanup, boot_id, first_step, steps) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, 'pending', ?, ?, ?)");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, run.job_id)
      .bind(2, run.number)
      .bind(3, encode_strings(run.gpus))
      .bind(4, encode_ints(run.gpu_indices))
      .bind(5, run.shim_pid)
      .bind(6, static_cast<int64_t>(run.shim_start_ticks))
      .bind(7, run.started_at_ms)
      .bind(8, run.run_dir)
      .bind(9, run.run_id)
      .bind(10, job_name)
      .bind(11, run.boot_id)
      .bind(12, run.first_step)
      .bind(13, encode_step_runs(run.steps));
  if (auto st = stmt->run(); !st) return tl::unexpected(st.error());
  return db_->last_insert_rowid();
}

Status Store::set_run_steps(int64_t run_id, const std::vector<StepRun>& steps) {
  auto stmt = db_->prepare("UPDATE runs SET steps = ? WHERE id = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  return stmt->bind(1, encode_step_runs(steps)).bind(2, run_id).run();
}

Status Store::set_steps_from_start(int64_t job_id, bool from_start) {
  auto stmt = db_->prepare("UPDATE jobs SET steps_from_start = ? WHERE id = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  return stmt->bind(1, int64_t{from_start ? 1 : 0}).bind(2, job_id).run();
}

Status Store::finish_run(int64_t run_id, int64_t ended_at_ms, std::optional<int> exit_code,
                         std::optional<int> signal, RunOutcome outcome) {
  auto stmt = db_->prepare(
      "UPDATE runs SET ended_at = ?, exit_code = ?, signal = ?, outcome = ? WHERE id = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  return stmt->bind(1, ended_at_ms)
      .bind(2, exit_code)
      .bind(3, signal)
      .bind(4, to_string(outcome))
      .bind(5, run_id)
      .run();
}

Status Store::set_retry_at(int64_t job_id, int64_t retry_at_ms) {
  auto stmt = db_->prepare("UPDATE jobs SET retry_at = ? WHERE id = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  return stmt->bind(1, retry_at_ms).bind(2, job_id).run();
}

Status Store::set_retry_base(int64_t job_id, int retry_base) {
  auto stmt = db_->prepare("UPDATE jobs SET retry_base = ? WHERE id = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  return stmt->bind(1, retry_base).bind(2, job_id).run();
}

Status Store::set_conditions_false_since(int64_t job_id, int64_t since_ms) {
  auto stmt = db_->prepare("UPDATE jobs SET conditions_false_since = ? WHERE id = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  return stmt->bind(1, since_ms).bind(2, job_id).run();
}

Status Store::set_spec(int64_t job_id, const JobSpec& spec) {
  auto stmt = db_->prepare("UPDATE jobs SET spec = ?, eta = ? WHERE id = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  EncodedSpec encoded = encode_spec_with_eta(spec);
  return stmt->bind(1, encoded.spec).bind(2, encoded.eta).bind(3, job_id).run();
}

Status Store::set_queue_position(int64_t job_id, int priority, int64_t queue_order) {
  auto stmt = db_->prepare("UPDATE jobs SET priority = ?, queue_order = ? WHERE id = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  return stmt->bind(1, priority).bind(2, queue_order).bind(3, job_id).run();
}

Status Store::clear_name(int64_t job_id) {
  auto stmt = db_->prepare("UPDATE jobs SET name = NULL WHERE id = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  return stmt->bind(1, job_id).run();
}

Status Store::set_run_verified(int64_t run_id, bool verified) {
  auto stmt = db_->prepare("UPDATE runs SET verified = ? WHERE id = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  return stmt->bind(1, verified ? 1 : 0).bind(2, run_id).run();
}

Status Store::upsert_reservation(const std::string& name, const std::vector<int>& gpus) {
  auto stmt = db_->prepare(
      "INSERT INTO reservations(name, gpus, created_at) VALUES (?, ?, ?) "
      "ON CONFLICT(name) DO UPDATE SET gpus = excluded.gpus");
  if (!stmt) return tl::unexpected(stmt.error());
  return stmt->bind(1, name).bind(2, encode_ints(gpus)).bind(3, wall_now_ms()).run();
}

Result<std::vector<std::pair<int64_t, JobState>>> Store::job_states() {
  auto stmt = db_->prepare("SELECT id, state FROM jobs ORDER BY id");
  if (!stmt) return tl::unexpected(stmt.error());
  return collect<std::pair<int64_t, JobState>>(
      *stmt, [](const Statement& row) -> Result<std::pair<int64_t, JobState>> {
        auto state = parse_job_state(row.text(1));
        if (!state) return tl::unexpected(state.error());
        return std::make_pair(row.int64(0), *state);
      });
}

Result<std::vector<Store::ReservationRow>> Store::reservations() {
  auto stmt = db_->prepare("SELECT name, gpus FROM reservations ORDER BY name");
  if (!stmt) return tl::unexpected(stmt.error());
  return collect<ReservationRow>(*stmt, [](const Statement& row) -> Result<ReservationRow> {
    return ReservationRow{row.text(0), decode_ints(row.text(1))};
  });
}

Status Store::set_preemption(int64_t run_id, int64_t by, int64_t deadline_ms) {
  auto stmt = db_->prepare("UPDATE runs SET preempted_by = ?, preempt_deadline = ? WHERE id = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  return stmt->bind(1, by).bind(2, deadline_ms).bind(3, run_id).run();
}

Status Store::set_peak_gpu_mem(int64_t run_id, int64_t mib) {
  auto stmt = db_->prepare("UPDATE runs SET peak_gpu_mem_mib = ? WHERE id = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  return stmt->bind(1, mib).bind(2, run_id).run();
}

Status Store::set_seen_gpus(int64_t run_id, const std::vector<std::string>& names,
                            const std::vector<int>& indices) {
  auto stmt = db_->prepare("UPDATE runs SET seen_gpus = ?, seen_gpu_indices = ? WHERE id = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  return stmt->bind(1, encode_strings(names)).bind(2, encode_ints(indices)).bind(3, run_id).run();
}

Status Store::set_run_usage(int64_t run_id, std::optional<int64_t> cpu_usec,
                            std::optional<int64_t> peak_memory_bytes) {
  auto stmt = db_->prepare("UPDATE runs SET cpu_usec = ?, peak_memory_bytes = ? WHERE id = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  return stmt->bind(1, cpu_usec).bind(2, peak_memory_bytes).bind(3, run_id).run();
}

Status Store::set_cleanup(int64_t run_id, CleanupState state) {
  auto stmt = db_->prepare("UPDATE runs SET cleanup = ? WHERE id = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  return stmt->bind(1, std::string(to_string(state))).bind(2, run_id).run();
}

Result<std::vector<Run>> Store::runs_in_cleanup(CleanupState state) {
  auto stmt = db_->prepare(fmt::format(
      "SELECT {} FROM runs WHERE cleanup = ? AND cleanup IN ('pending', 'attention') AND "
      "outcome != 'running' ORDER BY id",
      kRunColumns));
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, std::string(to_string(state)));
  return collect<Run>(*stmt, run_from_row);
}

Result<std::optional<Store::Footprint>> Store::learned_footprint(const std::string& job_name) {
  auto stmt = db_->prepare(
      "SELECT MAX(peak_gpu_mem_mib), COUNT(*) FROM (SELECT peak_gpu_mem_mib FROM runs "
      "WHERE job_name = ? AND job_name != '' AND outcome = 'succeeded' AND "
      "peak_gpu_mem_mib IS NOT NULL ORDER BY ended_at DESC, id DESC LIMIT 3)");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, job_name);
  auto row = stmt->step();
  if (!row) return tl::unexpected(row.error());
  if (stmt->is_null(0)) return std::optional<Footprint>();
  return std::optional<Footprint>(Footprint{stmt->int64(0), static_cast<int>(stmt->int64(1))});
}

Result<std::vector<std::string>> Store::footprint_names() {
  auto stmt = db_->prepare(
      "SELECT DISTINCT job_name FROM runs WHERE job_name != '' AND outcome = 'succeeded' AND "
      "peak_gpu_mem_mib IS NOT NULL");
  if (!stmt) return tl::unexpected(stmt.error());
  return collect<std::string>(*stmt, [](const Statement& row) -> Result<std::string> { return row.text(0); });
}

Status Store::set_log_note(int64_t run_id, const std::string& note) {
  auto stmt = db_->prepare("UPDATE runs SET log_note = ? WHERE id = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  return stmt->bind(1, note).bind(2, run_id).run();
}

Status Store::set_stop_reason(int64_t run_id, StopReason reason) {
  auto stmt = db_->prepare("UPDATE runs SET stop_reason = ? WHERE id = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  return stmt->bind(1, to_string(reason)).bind(2, run_id).run();
}

Result<int64_t> Store::append_event(Event event) {
  auto stmt =
      db_->prepare("INSERT INTO events(time, kind, job_id, run_number, data) VALUES (?, ?, ?, ?, ?)");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, event.time_ms).bind(2, event.kind).bind(3, event.job).bind(4, event.run);
  // Event data may carry text that is not UTF-8 (a command line, a test's stderr cut short):
  // replace such bytes rather than throw in the middle of a transaction.
  stmt->bind(5, event.data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (auto st = stmt->run(); !st) return tl::unexpected(st.error());
  return db_->last_insert_rowid();
}

Status Store::replace_resources(const std::vector<Resource>& resources) {
  if (auto st = db_->exec("DELETE FROM resources"); !st) return st;
  auto stmt = db_->prepare(
      "INSERT INTO resources(slot, name, idx, uuid, model, memory_total_mib, memory_used_mib) "
      "VALUES (?, ?, ?, ?, ?, ?, ?)");
  if (!stmt) return tl::unexpected(stmt.error());
  for (size_t slot = 0; slot < resources.size(); ++slot) {
    const Resource& r = resources[slot];
    auto st = stmt->bind(1, static_cast<int64_t>(slot))
                  .bind(2, r.name)
                  .bind(3, r.index)
                  .bind(4, r.uuid)
                  .bind(5, r.model)
                  .bind(6, r.memory_total_mib)
                  .bind(7, r.memory_used_mib)
                  .run();
    if (!st) return st;
  }
  return ok();
}

Status Store::set_meta(const std::string& key, const std::string& value) {
  auto stmt = db_->prepare("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)");
  if (!stmt) return tl::unexpected(stmt.error());
  return stmt->bind(1, key).bind(2, value).run();
}

Result<std::vector<Job>> Store::query_jobs(const std::string& where,
                                           const std::function<void(Statement&)>& bind,
                                           bool with_runs, bool with_env) {
  auto stmt = db_->prepare(fmt::format("SELECT {} FROM jobs {} ORDER BY id", job_columns(with_env), where));
  if (!stmt) return tl::unexpected(stmt.error());
  bind(*stmt);
  auto jobs = collect<Job>(*stmt, job_from_row);
  if (!jobs || !with_runs || jobs->empty()) return jobs;
  // The runs of exactly these jobs, in one query through runs_by_job: neither one query per
  // job nor a pass over every run ever recorded.
  auto runs_stmt = db_->prepare(fmt::format(
      "SELECT {} FROM runs WHERE job_id IN (SELECT id FROM jobs {}) ORDER BY job_id, number",
      kRunColumns, where));
  if (!runs_stmt) return tl::unexpected(runs_stmt.error());
  bind(*runs_stmt);
  auto runs = collect<Run>(*runs_stmt, run_from_row);
  if (!runs) return tl::unexpected(runs.error());
  std::unordered_map<int64_t, Job*> by_id;
  for (Job& job : *jobs) by_id[job.id] = &job;
  for (Run& run : *runs) {
    if (auto it = by_id.find(run.job_id); it != by_id.end()) it->second->runs.push_back(std::move(run));
  }
  return jobs;
}

Result<std::optional<Job>> Store::find_job(int64_t id, bool with_runs) {
  auto jobs = query_jobs("WHERE id = ?", [&](Statement& s) { s.bind(1, id); }, with_runs);
  if (!jobs) return tl::unexpected(jobs.error());
  if (jobs->empty()) return std::optional<Job>();
  return std::optional<Job>(std::move(jobs->front()));
}

Result<std::optional<Job>> Store::find_job_by_name(const std::string& name, bool with_runs) {
  auto jobs = query_jobs("WHERE name = ?", [&](Statement& s) { s.bind(1, name); }, with_runs);
  if (!jobs) return tl::unexpected(jobs.error());
  if (jobs->empty()) return std::optional<Job>();
  return std::optional<Job>(std::move(jobs->front()));
}

Result<std::vector<Job>> Store::list_jobs(bool active_only, bool with_runs) {
  std::string where =
      active_only ? "WHERE state IN ('pending','held','running','blocked')" : std::string();
  return query_jobs(where, [](Statement&) {}, with_runs);
}

Status Store::each_active_job(const std::function<Status(const Job&)>& visit) {
  // Nothing of an unfinished job's recovery reads its environment.
  const std::string where = "WHERE state IN ('pending','held','running','blocked')";
  auto jobs = db_->prepare(fmt::format("SELECT {} FROM jobs {} ORDER BY id", job_columns(false), where));
  if (!jobs) return tl::unexpected(jobs.error());
  // Their runs, by job in the same order: both statements step together.
  auto runs = db_->prepare(fmt::format(
      "SELECT {} FROM runs WHERE job_id IN (SELECT id FROM jobs {}) ORDER BY job_id, number",
      kRunColumns, where));
  if (!runs) return tl::unexpected(runs.error());
  std::optional<Run> next_run;
  auto step_run = [&]() -> Status {
    next_run.reset();
    auto row = runs->step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) return ok();
    auto run = run_from_row(*runs);
    if (!run) return tl::unexpected(run.error());
    next_run = std::move(*run);
    return ok();
  };
  if (auto st = step_run(); !st) return st;
  while (true) {
    auto row = jobs->step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) return ok();
    auto job = job_from_row(*jobs);
    if (!job) return tl::unexpected(job.error());
    while (next_run && next_run->job_id <= job->id) {
      if (next_run->job_id == job->id) job->runs.push_back(std::move(*next_run));
      if (auto st = step_run(); !st) return st;
    }
    if (auto st = visit(*job); !st) return st;
  }
}

Result<std::vector<QueuedJob>> Store::queued_jobs() {
  auto stmt = db_->prepare(
      "SELECT id, priority, queue_order, gpus FROM jobs WHERE state = 'pending' ORDER BY id");
  if (!stmt) return tl::unexpected(stmt.error());
  return collect<QueuedJob>(*stmt, [](const Statement& row) -> Result<QueuedJob> {
    return QueuedJob{row.int64(0), static_cast<int>(row.int64(1)), row.int64(2),
                     static_cast<int>(row.int64(3))};
  });
}

Result<std::vector<Run>> Store::running_runs() {
  auto stmt = db_->prepare(
      fmt::format("SELECT {} FROM runs WHERE outcome = 'running' ORDER BY id", kRunColumns));
  if (!stmt) return tl::unexpected(stmt.error());
  return collect<Run>(*stmt, run_from_row);
}

Result<std::vector<Run>> Store::runs_of(int64_t job_id) {
  auto stmt = db_->prepare(
      fmt::format("SELECT {} FROM runs WHERE job_id = ? ORDER BY number", kRunColumns));
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, job_id);
  return collect<Run>(*stmt, run_from_row);
}

Result<int> Store::last_run_number(int64_t job_id) {
  auto stmt = db_->prepare("SELECT COALESCE(MAX(number), 0) FROM runs WHERE job_id = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, job_id);
  auto row = stmt->step();
  if (!row) return tl::unexpected(row.error());
  return static_cast<int>(stmt->int64(0));
}

Result<std::optional<Run>> Store::last_begun_run(int64_t job_id) {
  auto stmt = db_->prepare(fmt::format(
      "SELECT {} FROM runs WHERE job_id = ? AND outcome != 'not-started' ORDER BY number DESC LIMIT 1",
      kRunColumns));
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, job_id);
  auto runs = collect<Run>(*stmt, run_from_row);
  if (!runs) return tl::unexpected(runs.error());
  if (runs->empty()) return std::optional<Run>();
  return std::optional<Run>(std::move(runs->front()));
}

Result<std::vector<Resource>> Store::resources() {
  auto stmt = db_->prepare(
      "SELECT name, idx, uuid, model, memory_total_mib, memory_used_mib FROM resources "
      "ORDER BY slot");
  if (!stmt) return tl::unexpected(stmt.error());
  return collect<Resource>(*stmt, [](const Statement& row) -> Result<Resource> {
    Resource r;
    r.name = row.text(0);
    if (!row.is_null(1)) r.index = static_cast<int>(row.int64(1));
    r.uuid = row.text(2);
    r.model = row.text(3);
    r.memory_total_mib = row.int64(4);
    r.memory_used_mib = row.int64(5);
    return r;
  });
}

Result<std::vector<Event>> Store::events_after(int64_t seq, int limit) {
  auto stmt = db_->prepare(
      "SELECT seq, time, kind, job_id, run_number, data FROM events WHERE seq > ? ORDER BY seq "
      "LIMIT ?");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, seq).bind(2, limit);
  return collect<Event>(*stmt, [](const Statement& row) -> Result<Event> {
    Event e;
    e.seq = row.int64(0);
    e.time_ms = row.int64(1);
    e.kind = row.text(2);
    if (!row.is_null(3)) e.job = row.int64(3);
    if (!row.is_null(4)) e.run = static_cast<int>(row.int64(4));
    e.data = nlohmann::json::parse(row.text(5), nullptr, false);
    if (e.data.is_discarded()) e.data = nlohmann::json::object();
    return e;
  });
}

Result<int64_t> Store::last_seq() {
  auto stmt = db_->prepare("SELECT COALESCE(MAX(seq), 0) FROM events");
  if (!stmt) return tl::unexpected(stmt.error());
  auto row = stmt->step();
  if (!row) return tl::unexpected(row.error());
  return stmt->int64(0);
}

Result<int64_t> Store::max_queue_order() {
  auto stmt = db_->prepare("SELECT COALESCE(MAX(queue_order), 0) FROM jobs");
  if (!stmt) return tl::unexpected(stmt.error());
  auto row = stmt->step();
  if (!row) return tl::unexpected(row.error());
  return stmt->int64(0);
}

Result<std::optional<std::string>> Store::meta(const std::string& key) {
  auto stmt = db_->prepare("SELECT value FROM meta WHERE key = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, key);
  auto row = stmt->step();
  if (!row) return tl::unexpected(row.error());
  if (!*row) return std::optional<std::string>();
  return std::optional<std::string>(stmt->text(0));
}

}  // namespace gpuq::store
