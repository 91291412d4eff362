// SPDX-License-Identifier: Apache-2.0
// The store (store.h): opening it, its writes (jobs, runs, events, resources, meta) and its
// small reads; job and run reads are in store_job_reads.cc, reading rows in rows.cc.
#include "store/store.h"

#include <fmt/format.h>

#include "store/codec.h"
#include "store/rows.h"
#include "store/schema.h"
#include "base/time.h"

namespace gpuq::store {

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

Status Store::read_snapshot(const std::function<Status()>& fn) {
  if (auto began = db_->exec("BEGIN DEFERRED"); !began) return began;
  // Ended however `fn` leaves (an exception included): nothing was written, so the end only
  // lets the read lock go, and the next snapshot sees the store as it is then.
  struct End {
    Database& db;
    ~End() {
      if (!db.exec("COMMIT")) (void)db.exec("ROLLBACK");
    }
  } end{*db_};
  return fn();
}

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
      .bind(6, spec_kept_apart(encoded.spec) ? std::string() : encoded.spec)
      .bind(7, job.reason)
      .bind(8, job.submitted_at_ms)
      .bind(9, job.lost_count)
      .bind(10, job.finished_at_ms ? std::optional<int64_t>(job.finished_at_ms) : std::nullopt)
      .bind(11, job.spec.user)
      .bind(12, job.array_id ? std::optional<int64_t>(job.array_id) : std::nullopt)
      .bind(13, encoded.eta);
  if (auto st = stmt->run(); !st) return tl::unexpected(st.error());
  int64_t id = db_->last_insert_rowid();
  if (!spec_kept_apart(encoded.spec)) return id;
  if (auto st = write_spec_apart(*db_, id, encoded.spec); !st) return tl::unexpected(st.error());
  return id;
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
  std::string inline_spec = spec_kept_apart(encoded.spec) ? std::string() : encoded.spec;
  if (auto st = stmt->bind(1, inline_spec).bind(2, encoded.eta).bind(3, job_id).run(); !st) return st;
  return write_spec_apart(*db_, job_id, encoded.spec);
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
