// SPDX-License-Identifier: Apache-2.0
// Pure decoders of what a client sends (docs/api.md): request bodies, query parameters and job
// references in, a plain struct or an `invalid_argument` Error naming the field out. The
// handlers use them before anything reaches the queue actor, and they need no daemon, so they
// can be tested and fuzzed alone (request_check.h runs them on raw bytes).
// JSON is parsed with the nesting limit of model/limits.h enforced while parsing (nothing deep
// is ever built), every field is type- and range-checked, and no message echoes the body's
// JSON, so no size or shape of input can make a message, a recursion or a throw unbounded.
// Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "api/http.h"
#include "api/usage.h"
#include "base/status.h"
#include "daemon/queue.h"
#include "model/job.h"

namespace gpuq::api {

// A JSON body: at most limits::kMaxBodyBytes, nested at most limits::kMaxJsonDepth deep.
Result<nlohmann::json> parse_json_body(std::string_view body);

// POST /v1/jobs: a submit request (spec_from_json's rules).
Result<JobSpec> decode_submit(std::string_view body);

// POST /v1/jobs with "array" ("0-99%4") or "grid" (["lr=1e-4,3e-4", "seed=0..4"]) and an
// optional "max_running" (docs/sweeps.md): the sweep, refused over `max_elements` elements,
// and every other field as for one job (the elements' base). nullopt for a body with neither.
Result<std::optional<daemon::SweepRequest>> decode_sweep_submit(std::string_view body,
                                                                size_t max_elements);
// The same over a body parse_json_body has read; its sweep fields are taken out of `body` when
// it is a sweep, and it is left as it is otherwise (for spec_from_json: one parse per submit).
Result<std::optional<daemon::SweepRequest>> decode_sweep_submit(nlohmann::json& body,
                                                                size_t max_elements);

// POST /v1/jobs/{ref}/move: exactly one of {"before": ref}, {"after": ref}, {"top": true},
// {"bottom": true}, {"priority": P}.
struct MoveBody {
  daemon::MoveRequest::Where where = daemon::MoveRequest::Where::kTop;
  std::string other;  // before/after: the other job's reference, for the handler to resolve
  int priority = 0;   // kPriority
};
Result<MoveBody> decode_move(std::string_view body);

// POST /v1/gpus/{gpu}/release: {"attention": true}, which says a person checked the GPU.
struct ReleaseBody {
  bool attention = true;
};
Result<ReleaseBody> decode_release(std::string_view body);

// POST /v1/arrays/{ref}/cancel|hold|release|retry: an empty body or {}; retry also takes
// {"failed": true}, which retries the failed elements only (`gpuq retry NAME --failed`), and
// {"from_start": true}, with which each element with steps runs every step again (`gpuq retry
// NAME --from-start`); each takes {"brief": true}, which answers the elements' ids instead of
// their jobs.
struct ArrayActionRequest {
  daemon::ArrayAction action = daemon::ArrayAction::kCancel;
  bool from_start = false;
  bool brief = false;  // {"brief": true}: answer the elements' ids, not their jobs
};
Result<ArrayActionRequest> decode_array_action(std::string_view verb, std::string_view body);
// POST /v1/jobs/{ref}/retry: an empty body or {}, or {"from_start": true} (a job with steps runs
// every step again, `gpuq retry --from-start`). Returns from_start.
Result<bool> decode_job_retry(std::string_view body);

// POST /v1/gc: {"dry_run": bool} (an empty body: a real prune).
struct GcBody {
  bool dry_run = false;
};
Result<GcBody> decode_gc(std::string_view body);

// POST /v1/plans: {"jobs": [submit request], "reservations": [{"name", "gpus", "jobs"}],
// "replace": bool}. A job with "array" or "grid" (and "max_running") is a job array, read as
// decode_sweep_submit reads one, refused over `max_sweep_elements` elements.
Result<daemon::PlanRequest> decode_plan(std::string_view body,
                                        size_t max_sweep_elements = spec::kDefaultMaxSweepElements);

// GET /v1/events?after=SEQ&limit=N&wait_ms=T. `limit` and `wait_ms` above their caps
// (limits::kMaxEventsPerPage, kMaxEventWaitMs) are taken as the cap, as docs/api.md says.
struct EventsQuery {
  int64_t after = 0;
  int64_t limit = 0;
  int64_t wait_ms = 0;
};
Result<EventsQuery> decode_events_query(const Target& target);

// GET /v1/jobs/{ref}/log?run=N&offset=B&limit=L&step=S. `limit` above limits::kMaxLogChunk is
// taken as that. With `step`, the offset counts from the step's first byte (api/step_log.h).
struct LogQuery {
  std::optional<int> run;   // absent: the latest run (with `step`: the newest that reached it)
  std::optional<int> step;  // absent: the whole log
  int64_t offset = 0;
  int64_t limit = 0;
};
Result<LogQuery> decode_log_query(const Target& target);

// GET /v1/timeline?from_ms=A&to_ms=B: epoch milliseconds, each a whole number from 0 to
// limits::kEndOfTimeMs (so that no arithmetic on them can overflow); default the 24 hours up to
// `now_ms`; from_ms before to_ms, at most limits::kMaxReportWindowMs apart.
Result<Window> decode_timeline_query(const Target& target, int64_t now_ms);

// GET /v1/report?since=7d&until=T&by=user: `since` and `until` a duration back from `now_ms`
// (at most 36500d) or an RFC 3339 time; default the 7 days up to now; `until` is held at now
// (the future has no usage yet); since before until, at most limits::kMaxReportWindowMs apart.
// `by`: user (default), name, outcome or gpu.
struct ReportQuery {
  Window window;
  GroupBy by = GroupBy::kUser;
};
Result<ReportQuery> decode_report_query(const Target& target, int64_t now_ms);

// GET /v1/status?finished=N (the latest N finished jobs) or ?finished=all (nullopt: every
// one); absent or empty: the latest kStatusFinished, as many as `gpuq status` shows.
inline constexpr size_t kStatusFinished = 10;
Result<std::optional<size_t>> decode_status_finished(const Target& target);

// GET /v1/status?pending_limit=N&pending_offset=M&held_limit=H: one page of the pending jobs
// in serving order, N from 0 to kMaxPendingLimit, M from 0 to INT32_MAX (default 0; only with
// N), and with H (0 to kMaxPendingLimit; only with N) the oldest H held jobs and the oldest H
// blocked ones (default: every one). nullopt when none is given (every unfinished job).
inline constexpr size_t kMaxPendingLimit = 10'000;
struct PendingPage {
  size_t offset = 0;
  size_t limit = 0;
  std::optional<size_t> held_limit;
};
Result<std::optional<PendingPage>> decode_pending_page(const Target& target);

// GET /v1/events/stream: the cursor, from Last-Event-ID (unless empty), else ?after=, else 0.
Result<int64_t> decode_stream_cursor(const Request& request, const Target& target);

// A job reference in a path or body: an id (only digits: 1..limits::kMaxId) or a name.
struct JobRef {
  int64_t id = 0;    // 0 when `name` is set
  std::string name;
};
Result<JobRef> parse_job_ref(std::string_view ref);

}  // namespace gpuq::api
