// SPDX-License-Identifier: Apache-2.0
#include "store/schema.h"

#include <array>
#include <fmt/format.h>

#include "base/time.h"

namespace gpuq::store {
namespace {

constexpr std::array<const char*, 20> kMigrations = {
    // 1: jobs, runs, resources, events, meta.
    R"sql(
CREATE TABLE jobs (
  id INTEGER PRIMARY KEY,
  name TEXT UNIQUE,
  state TEXT NOT NULL CHECK (state IN ('pending','held','running','succeeded','failed',
                                       'cancelled','blocked','skipped')),
  priority INTEGER NOT NULL,
  queue_order INTEGER NOT NULL,
  gpus INTEGER NOT NULL CHECK (gpus >= 0),
  spec TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  submitted_at INTEGER NOT NULL,
  finished_at INTEGER,
  lost_count INTEGER NOT NULL DEFAULT 0 CHECK (lost_count >= 0)
);
CREATE INDEX jobs_active ON jobs(state) WHERE state IN ('pending','held','running','blocked');
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  number INTEGER NOT NULL CHECK (number >= 1),
  gpus TEXT NOT NULL,
  gpu_indices TEXT NOT NULL,
  shim_pid INTEGER NOT NULL,
  shim_start_ticks INTEGER NOT NULL,
  started_at INTEGER NOT NULL,
  ended_at INTEGER,
  exit_code INTEGER,
  signal INTEGER,
  outcome TEXT NOT NULL CHECK (outcome IN ('running','succeeded','failed','timed-out',
                                           'cancelled','preempted','lost')),
  run_dir TEXT NOT NULL,
  stop_reason TEXT NOT NULL DEFAULT '',
  UNIQUE (job_id, number),
  CHECK ((outcome = 'running') = (ended_at IS NULL))
);
CREATE INDEX runs_by_job ON runs(job_id);
CREATE INDEX runs_running ON runs(outcome) WHERE outcome = 'running';
CREATE TABLE resources (
  slot INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  idx INTEGER,
  uuid TEXT NOT NULL DEFAULT '',
  model TEXT NOT NULL DEFAULT '',
  memory_total_mib INTEGER NOT NULL DEFAULT 0,
  memory_used_mib INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  time INTEGER NOT NULL,
  kind TEXT NOT NULL,
  job_id INTEGER,
  run_number INTEGER,
  data TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX events_by_job ON events(job_id);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
)sql",
    // 2: the scheduling language: retry times, DONE_IF verification, GPU reservations.
    R"sql(
ALTER TABLE jobs ADD COLUMN retry_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN verified INTEGER CHECK (verified IN (0, 1));
CREATE TABLE reservations (
  name TEXT PRIMARY KEY,
  gpus TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
)sql",
    // 3: `gpuq retry` starts a fresh retry budget: only runs after this number count.
    R"sql(
ALTER TABLE jobs ADD COLUMN retry_base INTEGER NOT NULL DEFAULT 0;
)sql",
    // 4: GPU truth: each run's cleanup marker and cleanup state, its peak GPU memory and the
    // job name it ran under (learned footprints), and preemptions in flight.
    R"sql(
ALTER TABLE runs ADD COLUMN run_id TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN job_name TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN peak_gpu_mem_mib INTEGER CHECK (peak_gpu_mem_mib >= 0);
ALTER TABLE runs ADD COLUMN preempted_by INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN preempt_deadline INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cleanup TEXT NOT NULL DEFAULT 'done'
  CHECK (cleanup IN ('pending','done','attention','released'));
CREATE INDEX runs_cleanup ON runs(cleanup) WHERE cleanup IN ('pending','attention');
CREATE INDEX runs_by_name ON runs(job_name) WHERE job_name != '' AND outcome = 'succeeded';
)sql",
    // 5: no silent queue: the watchers' open episodes (so a restart neither repeats nor loses
    // one) and each hook's delivery cursor (committed after a successful delivery).
    R"sql(
CREATE TABLE watch_episodes (
  key TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  since INTEGER NOT NULL,
  reported INTEGER NOT NULL,
  data TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE hook_cursors (
  name TEXT PRIMARY KEY,
  seq INTEGER NOT NULL DEFAULT 0 CHECK (seq >= 0),
  delivered INTEGER NOT NULL DEFAULT 0,
  last_error TEXT NOT NULL DEFAULT '',
  last_error_at INTEGER NOT NULL DEFAULT 0,
  updated_at INTEGER NOT NULL DEFAULT 0
);
)sql",
    // 6: since when a pending job's conditions (REQUIRES, file:) have been false, so that a
    // restart does not start job.requires_wait's count afresh.
    R"sql(
ALTER TABLE jobs ADD COLUMN conditions_false_since INTEGER NOT NULL DEFAULT 0;
)sql",
    // 7: the boot a run started in (a run of an earlier boot cannot be alive, whatever its pid
    // and start time say), and why a run's log may lack output (a full disk, the log's cap).
    R"sql(
ALTER TABLE runs ADD COLUMN boot_id TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN log_note TEXT NOT NULL DEFAULT '';
)sql",
    // 8: retention (finished jobs are pruned). Self-contained: it only has to stay after 6.
    // - `jobs` is rebuilt with AUTOINCREMENT: once a job is pruned, its id (and so its
    //   directory jobs/ID, and what `gpuq show ID` means) must never be given to a new job.
    //   The copy lists every column up to version 6; a migration that adds a `jobs` column
    //   before this one must add it here too. migrate() runs each step with foreign keys off
    //   and checks them before the commit, as SQLite's table-rebuild procedure asks.
    // - Indexes for the reads that must not grow with history: the latest finished jobs
    //   (status) and the oldest (pruning); job-less events by time (pruning). finished_at is
    //   set exactly when a job is finished (Queue::set_state), so jobs_finished needs no
    //   `state IN (...)`: SQLite evaluates such a list of more than two values through a
    //   temporary b-tree, built anew for each old and new row every time a job's state changes.
    // - `pruned_counts`: what pruning removed, by event kind and run outcome, so /metrics'
    //   all-time counters (read from the store at each start) do not go back.
    R"sql(
CREATE TABLE jobs_new (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT UNIQUE,
  state TEXT NOT NULL CHECK (state IN ('pending','held','running','succeeded','failed',
                                       'cancelled','blocked','skipped')),
  priority INTEGER NOT NULL,
  queue_order INTEGER NOT NULL,
  gpus INTEGER NOT NULL CHECK (gpus >= 0),
  spec TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  submitted_at INTEGER NOT NULL,
  finished_at INTEGER,
  lost_count INTEGER NOT NULL DEFAULT 0 CHECK (lost_count >= 0),
  retry_at INTEGER NOT NULL DEFAULT 0,
  retry_base INTEGER NOT NULL DEFAULT 0,
  conditions_false_since INTEGER NOT NULL DEFAULT 0
);
INSERT INTO jobs_new(id, name, state, priority, queue_order, gpus, spec, reason, submitted_at,
                     finished_at, lost_count, retry_at, retry_base, conditions_false_since)
  SELECT id, name, state, priority, queue_order, gpus, spec, reason, submitted_at,
         finished_at, lost_count, retry_at, retry_base, conditions_false_since FROM jobs;
DROP TABLE jobs;
ALTER TABLE jobs_new RENAME TO jobs;
CREATE INDEX jobs_active ON jobs(state) WHERE state IN ('pending','held','running','blocked');
CREATE INDEX jobs_finished ON jobs(finished_at, id) WHERE finished_at IS NOT NULL;
CREATE INDEX events_jobless ON events(time) WHERE job_id IS NULL;
CREATE TABLE pruned_counts (
  family TEXT NOT NULL CHECK (family IN ('event','run')),
  key TEXT NOT NULL,
  count INTEGER NOT NULL CHECK (count >= 0),
  PRIMARY KEY (family, key)
);
)sql",
    // 9: the dashboard's data (docs/api.md, "Timeline" and "Report").
    // - jobs.user: the login name of the submitter ('' for jobs of older daemons).
    // - runs.seen_gpus / seen_gpu_indices: the GPUs the run's processes were seen on by the
    //   probe (JSON lists, as runs.gpus / gpu_indices), to tell a job that uses GPUs it was not
    //   given.
    // - run_samples: at most one row per running run per 30 s (utilisation, the memory of its
    //   processes), deleted with their run (store_prune.cc). Keyed by run, then time: a run's
    //   samples are one range.
    // - runs_by_end: finished runs by end time, so the runs overlapping a window (timeline,
    //   report) are a range read of this index plus the running ones (runs_running).
    // - jobs_pending_order: pending jobs in serving order, so a page of the queue
    //   (status?pending_limit=) reads the page, not the queue.
    R"sql(
ALTER TABLE jobs ADD COLUMN user TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN seen_gpus TEXT NOT NULL DEFAULT '[]';
ALTER TABLE runs ADD COLUMN seen_gpu_indices TEXT NOT NULL DEFAULT '[]';
CREATE TABLE run_samples (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  time INTEGER NOT NULL,
  util INTEGER CHECK (util IS NULL OR util BETWEEN 0 AND 100),
  mem_mib INTEGER NOT NULL CHECK (mem_mib >= 0),
  PRIMARY KEY (run_id, time)
) WITHOUT ROWID;
CREATE INDEX runs_by_end ON runs(ended_at) WHERE ended_at IS NOT NULL;
CREATE INDEX jobs_pending_order ON jobs(priority, queue_order, id) WHERE state = 'pending';
)sql",
    // 10: what a run's cgroup accounted for (docs/containment.md), recorded when its cleanup
    // is confirmed; NULL for runs without a cgroup, and peak memory NULL where the memory
    // controller is not enabled.
    R"sql(
ALTER TABLE runs ADD COLUMN cpu_usec INTEGER CHECK (cpu_usec IS NULL OR cpu_usec >= 0);
ALTER TABLE runs ADD COLUMN peak_memory_bytes INTEGER CHECK (peak_memory_bytes IS NULL OR peak_memory_bytes >= 0);
)sql",
    // 11: job arrays and grids (docs/sweeps.md): an array is submitted as one unit and its
    // elements are ordinary jobs that name it in jobs.array_id (NULL for a job alone).
    // - arrays: AUTOINCREMENT for the reason of migration 8 (a pruned array's id never names
    //   a new one); deleted with its last element (store_prune.cc), so the reference holds.
    // - jobs.array_id by ALTER TABLE: migration 8's rebuild copies the columns of version 6
    //   only, and runs before this one.
    // - jobs_by_array: an array's elements (and "is any element left?" when pruning) are one
    //   range of it; partial, as most jobs are alone.
    R"sql(
CREATE TABLE arrays (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  sweep TEXT NOT NULL,
  max_running INTEGER NOT NULL DEFAULT 0 CHECK (max_running >= 0),
  size INTEGER NOT NULL CHECK (size >= 1),
  submitted_at INTEGER NOT NULL
);
ALTER TABLE jobs ADD COLUMN array_id INTEGER REFERENCES arrays(id);
CREATE INDEX jobs_by_array ON jobs(array_id) WHERE array_id IS NOT NULL;
)sql",
    // 12: an array's counts by state (`gpuq status`, array.finished) are one range of
    // jobs_by_array, now covering the state too; arrays.base is the spec every element was
    // made from (JSON, as jobs.spec), compared when the same array is submitted again (NULL
    // for an array of schema 11: its first element is compared instead).
    R"sql(
DROP INDEX jobs_by_array;
CREATE INDEX jobs_by_array ON jobs(array_id, state) WHERE array_id IS NOT NULL;
ALTER TABLE arrays ADD COLUMN base TEXT;
)sql",
    // 13: what an ETA reads of a job's spec (est_ms, timeout_ms, not_before_ms, deps, lanes,
    // gpu_mem, share: a JSON list, null where the spec leaves a field out), kept beside the
    // spec by every write of it, and jobs_eta, an index of the unfinished jobs that covers what
    // an ETA reads: `gpuq status` with 10,000 elements queued reads a small index instead of
    // every element's spec (each holding its environment).
    R"sql(
ALTER TABLE jobs ADD COLUMN eta TEXT;
UPDATE jobs SET eta = json_extract(spec, '$.est_ms', '$.timeout_ms', '$.not_before_ms', '$.deps',
                                   '$.lanes', '$.gpu_mem', '$.share');
CREATE INDEX jobs_eta ON jobs(id, state, name, priority, queue_order, gpus, retry_at, array_id, eta)
  WHERE state IN ('pending','held','running','blocked');
)sql",
    // 14: the run outcome 'not-started': recorded, but the daemon died before it let the shim
    // go, so the job never ran. SQLite cannot change a CHECK in place: `runs` is rebuilt by
    // its table-rebuild procedure (foreign keys off, checked before the commit; see 8), every
    // column in the order the migrations before this one left them, then its indexes.
    R"sql(
CREATE TABLE runs_new (
  id INTEGER PRIMARY KEY,
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  number INTEGER NOT NULL CHECK (number >= 1),
  gpus TEXT NOT NULL,
  gpu_indices TEXT NOT NULL,
  shim_pid INTEGER NOT NULL,
  shim_start_ticks INTEGER NOT NULL,
  started_at INTEGER NOT NULL,
  ended_at INTEGER,
  exit_code INTEGER,
  signal INTEGER,
  outcome TEXT NOT NULL CHECK (outcome IN ('running','succeeded','failed','timed-out',
                                           'cancelled','preempted','lost','not-started')),
  run_dir TEXT NOT NULL,
  stop_reason TEXT NOT NULL DEFAULT '',
  verified INTEGER CHECK (verified IN (0, 1)),
  run_id TEXT NOT NULL DEFAULT '',
  job_name TEXT NOT NULL DEFAULT '',
  peak_gpu_mem_mib INTEGER CHECK (peak_gpu_mem_mib >= 0),
  preempted_by INTEGER NOT NULL DEFAULT 0,
  preempt_deadline INTEGER NOT NULL DEFAULT 0,
  cleanup TEXT NOT NULL DEFAULT 'done' CHECK (cleanup IN ('pending','done','attention','released')),
  boot_id TEXT NOT NULL DEFAULT '',
  log_note TEXT NOT NULL DEFAULT '',
  seen_gpus TEXT NOT NULL DEFAULT '[]',
  seen_gpu_indices TEXT NOT NULL DEFAULT '[]',
  cpu_usec INTEGER CHECK (cpu_usec IS NULL OR cpu_usec >= 0),
  peak_memory_bytes INTEGER CHECK (peak_memory_bytes IS NULL OR peak_memory_bytes >= 0),
  UNIQUE (job_id, number),
  CHECK ((outcome = 'running') = (ended_at IS NULL))
);
INSERT INTO runs_new SELECT id, job_id, number, gpus, gpu_indices, shim_pid, shim_start_ticks,
  started_at, ended_at, exit_code, signal, outcome, run_dir, stop_reason, verified, run_id,
  job_name, peak_gpu_mem_mib, preempted_by, preempt_deadline, cleanup, boot_id, log_note,
  seen_gpus, seen_gpu_indices, cpu_usec, peak_memory_bytes FROM runs;
DROP TABLE runs;
ALTER TABLE runs_new RENAME TO runs;
CREATE INDEX runs_by_job ON runs(job_id);
CREATE INDEX runs_running ON runs(outcome) WHERE outcome = 'running';
CREATE INDEX runs_cleanup ON runs(cleanup) WHERE cleanup IN ('pending','attention');
CREATE INDEX runs_by_name ON runs(job_name) WHERE job_name != '' AND outcome = 'succeeded';
CREATE INDEX runs_by_end ON runs(ended_at) WHERE ended_at IS NOT NULL;
)sql",
    // 15: jobs with steps (docs/jobs.md, "Steps"). A run records the step it began at and what
    // each step did (JSON: model/step.h's StepRun list, '[]' for runs of jobs without steps);
    // `gpuq retry --from-start` asks the next run to begin at step 0.
    R"sql(
ALTER TABLE runs ADD COLUMN first_step INTEGER NOT NULL DEFAULT 0 CHECK (first_step >= 0);
ALTER TABLE runs ADD COLUMN steps TEXT NOT NULL DEFAULT '[]';
ALTER TABLE jobs ADD COLUMN steps_from_start INTEGER NOT NULL DEFAULT 0 CHECK (steps_from_start IN (0, 1));
)sql",
    // 16: jobs_eta covers jobs.user too: ETAs order a shared box's queue by fair share between
    // its users (docs/lab.md), and still read the index alone.
    R"sql(
DROP INDEX jobs_eta;
CREATE INDEX jobs_eta ON jobs(id, state, name, priority, queue_order, gpus, retry_at, array_id, eta, user)
  WHERE state IN ('pending','held','running','blocked');
)sql",
    // 17: jobs_pending_single: the pending jobs that are not an array's elements, in serving
    // order, so that `gpuq status`'s page of the queue (status?pending_limit=&arrays=collapse)
    // and its count read these alone when an array of a million elements waits beside them.
    R"sql(
CREATE INDEX jobs_pending_single ON jobs(priority, queue_order, id)
  WHERE state = 'pending' AND array_id IS NULL;
)sql",
    // 18: a long spec apart from its job's row (store/rows.h, kInlineSpecMaxBytes: 2048 bytes):
    // a spec holds the job's script, and a row that spills into overflow pages is written whole
    // again by every change that resizes it. job_specs holds those specs, jobs.spec is '' for
    // them; a spec goes with its job (ON DELETE CASCADE).
    R"sql(
CREATE TABLE job_specs (
  id INTEGER PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
  spec TEXT NOT NULL
);
INSERT INTO job_specs(id, spec) SELECT id, spec FROM jobs WHERE length(CAST(spec AS BLOB)) > 2048;
UPDATE jobs SET spec = '' WHERE id IN (SELECT id FROM job_specs);
)sql",
    // 19: jobs_waiting_single: the held and blocked jobs that are not an array's elements, by
    // id, so that `gpuq status`'s page of the queue (status?held_limit=&arrays=collapse) reads
    // the first of them, and counts them, without visiting a held array of a million elements.
    R"sql(
CREATE INDEX jobs_waiting_single ON jobs(state, id)
  WHERE state IN ('held','blocked') AND array_id IS NULL;
)sql",
    // 20: jobs_finished_user: the finished jobs of each user, latest last, so that one user's
    // view (`gpuq status --user`, --mine) finds their latest finished jobs and counts them
    // without reading the whole history.
    R"sql(
CREATE INDEX jobs_finished_user ON jobs(user, finished_at, id) WHERE finished_at IS NOT NULL;
)sql",
};

// Fails when any row refers to a row that does not exist (PRAGMA foreign_key_check).
Status check_foreign_keys(Database& db) {
  auto stmt = db.prepare("PRAGMA foreign_key_check");
  if (!stmt) return tl::unexpected(stmt.error());
  auto row = stmt->step();
  if (!row) return tl::unexpected(row.error());
  if (!*row) return ok();
  return fail(Code::kFailedPrecondition,
              fmt::format("a row of table {} refers to a missing row of table {}", stmt->text(0),
                          stmt->text(2)));
}

}  // namespace

int current_schema_version() { return static_cast<int>(kMigrations.size()); }

Result<int> schema_version(Database& db) {
  auto created = db.exec(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
      "applied_at INTEGER NOT NULL)");
  if (!created) return tl::unexpected(created.error());
  auto stmt = db.prepare("SELECT COALESCE(MAX(version), 0) FROM schema_migrations");
  if (!stmt) return tl::unexpected(stmt.error());
  auto row = stmt->step();
  if (!row) return tl::unexpected(row.error());
  return static_cast<int>(stmt->int64(0));
}

Status migrate(Database& db, int target) {
  if (target < 0) target = current_schema_version();
  auto version = schema_version(db);
  if (!version) return tl::unexpected(version.error());
  if (*version > current_schema_version()) {
    return fail(Code::kFailedPrecondition,
                fmt::format("the store {} has schema version {}, but this gpuq knows versions up "
                            "to {}: it was written by a newer gpuq. Run that newer gpuq, or move "
                            "the state directory aside to start afresh",
                            db.path(), *version, current_schema_version()));
  }
  for (int next = *version + 1; next <= target; ++next) {
    // Foreign keys off while a step runs (a step may rebuild a table others refer to; the
    // pragma is ignored inside a transaction), and checked before it commits.
    if (auto st = db.exec("PRAGMA foreign_keys=OFF"); !st) return st;
    auto applied = in_transaction(db, [&]() -> Status {
      if (auto st = db.exec(kMigrations[next - 1]); !st) return st;
      if (auto st = check_foreign_keys(db); !st) return st;
      auto insert = db.prepare("INSERT INTO schema_migrations(version, applied_at) VALUES (?, ?)");
      if (!insert) return tl::unexpected(insert.error());
      return insert->bind(1, next).bind(2, wall_now_ms()).run();
    });
    if (auto st = db.exec("PRAGMA foreign_keys=ON"); !st) return st;
    if (!applied) {
      return fail(applied.error().code,
                  fmt::format("migrating the store to version {}: {}", next,
                              applied.error().message));
    }
  }
  return ok();
}

}  // namespace gpuq::store
