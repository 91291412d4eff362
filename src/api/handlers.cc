// SPDX-License-Identifier: Apache-2.0
// The endpoints of docs/api.md: routing, queries on the read-only store, and commands handed to
// the queue actor.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <iterator>
#include <unordered_map>

#include "api/bodies.h"
#include "api/gpu_view.h"
#include "api/metrics.h"
#include "api/on_actor.h"
#include "api/permissions.h"
#include "api/server.h"
#include "api/step_log.h"
#include "base/api_version.h"
#include "base/time.h"
#include "daemon/job_log_file.h"
#include "model/event.h"
#include "model/json.h"
#include "model/spec_json.h"
#include "store/schema.h"

namespace gpuq::api {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;

namespace {

Response not_found(const std::string& what) {
  return error_response({Code::kNotFound, what});
}

// How long a submit waits for its working directory to answer a stat.
constexpr std::chrono::milliseconds kDirCheckDeadline{5000};

}  // namespace

awaitable<Response> Server::handle(const Request& request, Caller caller) {
  Route r = route(request.method(), std::string_view(request.target().data(), request.target().size()));
  if (auto allowed = authorize(r, caller); !allowed) co_return error_response(allowed.error());
  switch (r.endpoint) {
    case Endpoint::kMetrics: co_return metrics();
    case Endpoint::kHealth: co_return health();
    case Endpoint::kStatus: co_return status(r.target);
    case Endpoint::kGpus: co_return gpus();
    case Endpoint::kHooks: co_return hooks();
    case Endpoint::kReleaseGpu: co_return co_await release_gpu(r.subject, request);
    case Endpoint::kEvents: co_return co_await events(r.target);
    case Endpoint::kSubmit: co_return co_await submit(request, std::move(caller));
    case Endpoint::kShow: co_return show(r.subject, caller);
    case Endpoint::kArray: co_return array(r.subject);
    case Endpoint::kArrayControl:
      if (r.verb == "move") co_return co_await move_array(r.subject, request);
      co_return co_await act_on_array(r.subject, r.verb, request);
    case Endpoint::kCancel: co_return co_await cancel(r.subject);
    case Endpoint::kControl: co_return co_await control(r.subject, r.verb, request);
    case Endpoint::kPlan: co_return co_await submit_plan(request, std::move(caller));
    case Endpoint::kDrain: co_return co_await drain(r.verb == "drain");
    case Endpoint::kGc: co_return co_await gc(request);
    case Endpoint::kLog: co_return log(r.subject, r.target);
    case Endpoint::kFleet: co_return fleet();
    case Endpoint::kTimeline: co_return timeline(r.target);
    case Endpoint::kReport: co_return report(r.target);
    case Endpoint::kDashboardSession: co_return dashboard_session(r.verb, caller);
    case Endpoint::kMe: co_return me(caller);
    case Endpoint::kEventStream:  // answered by the session itself (sse.cc)
    case Endpoint::kNone: break;
  }
  const auto& s = r.target.segments;
  if (s.empty() || s[0] != "v1") co_return not_found("unknown path; the API lives under /v1 (docs/api.md)");
  co_return not_found(fmt::format("no endpoint {} {}", std::string(request.method_string()),
                                  std::string(request.target())));
}

Result<int64_t> Server::resolve(const std::string& ref) {
  auto parsed = parse_job_ref(ref);
  if (!parsed) return tl::unexpected(parsed.error());
  if (parsed->id != 0) return parsed->id;
  auto job = store_->find_job_by_name(ref, false);
  if (!job) return tl::unexpected(job.error());
  if (!*job) return fail(Code::kNotFound, fmt::format("no job named '{}'", ref));
  return (*job)->id;
}

void Server::attach_reasons(std::vector<Job>& jobs) {
  auto waits = context_.queue.waits();
  int64_t now = wall_now_ms();
  // The jobs asked about (a page: ~100) in a small map, and one walk over the pass's waits,
  // which hold every queued job (a million): no index of the waits is built per request.
  std::unordered_map<int64_t, std::string> reasons;
  for (const Job& job : jobs) {
    if (job.state == JobState::kPending || job.state == JobState::kHeld) reasons.emplace(job.id, "");
  }
  if (reasons.empty()) return;
  for (const auto& w : waits->not_ready) {
    if (auto it = reasons.find(w.job_id); it != reasons.end()) it->second = w.render(now);
  }
  for (const auto& w : waits->waits) {  // a ready job's reason wins, as WaitList::reason's order
    if (auto it = reasons.find(w.job_id); it != reasons.end()) it->second = w.reason.text(waits->snapshot);
  }
  for (Job& job : jobs) {
    auto it = reasons.find(job.id);
    if (it == reasons.end()) continue;
    job.reason = !it->second.empty() ? std::move(it->second)
                 : job.reason.empty() ? "waiting for the scheduler"
                                      : job.reason;
  }
}

std::vector<nlohmann::json> Server::resource_objects(const std::vector<Resource>& resources) {
  auto runs = store_->running_runs();
  auto views = gpu_views(resources, runs ? *runs : std::vector<Run>{}, *context_.queue.waits());
  const std::vector<daemon::GpuReading> readings = context_.queue.gpu_readings().get();
  std::vector<nlohmann::json> out;
  for (size_t slot = 0; slot < resources.size(); ++slot) {
    const Resource& r = resources[slot];
    const daemon::GpuHealth& health = views[slot].health;
    const daemon::GpuReading reading = slot < readings.size() ? readings[slot] : daemon::GpuReading{};
    out.push_back({{"name", r.name},
                   {"index", r.index ? nlohmann::json(*r.index) : nlohmann::json(nullptr)},
                   {"uuid", r.uuid},
                   {"model", r.model},
                   {"memory_total_mib", r.memory_total_mib},
                   {"memory_used_mib", health.memory_used_mib >= 0 ? health.memory_used_mib : r.memory_used_mib},
                   {"utilization", health.utilization >= 0 ? nlohmann::json(health.utilization) : nlohmann::json(nullptr)},
                   {"temperature_c", reading.temperature_c >= 0 ? nlohmann::json(reading.temperature_c) : nlohmann::json(nullptr)},
                   {"power_w", reading.power_w >= 0 ? nlohmann::json(reading.power_w) : nlohmann::json(nullptr)},
                   {"state", std::string(views[slot].state)},
                   {"job", views[slot].job != 0 ? nlohmann::json(views[slot].job) : nlohmann::json(nullptr)},
                   {"attention", health.attention},
                   {"foreign", health.foreign},
                   {"preempting_for", health.preempting_for ? nlohmann::json(health.preempting_for) : nlohmann::json(nullptr)}});
  }
  return out;
}

nlohmann::json Server::open_episodes(int64_t now) {
  nlohmann::json episodes = nlohmann::json::array();
  auto open = store_->episodes();
  if (!open) return episodes;
  for (const auto& e : *open) {
    auto data = nlohmann::json::parse(e.data, nullptr, false);
    if (!data.is_object()) data = nlohmann::json::object();
    episodes.push_back({{"kind", e.kind},
                        {"key", e.key},
                        {"job", data.value("job", nlohmann::json(nullptr))},
                        {"since_ms", e.since_ms},
                        {"for_ms", now - e.since_ms},
                        {"detail", data.value("detail", nlohmann::json::object())}});
  }
  return episodes;
}

Response Server::health() {
  auto waits = context_.queue.waits();
  int64_t now = wall_now_ms();
  nlohmann::json body = {{"ok", true},
                         {"now_ms", now},
                         {"last_pass_us", waits->pass_us},
                         {"last_pass_starts_us", waits->starts_us},
                         {"pass", waits->pass},
                         {"last_look_us", context_.queue.last_look_us()},
                         {"active_jobs", waits->active_jobs},
                         {"pid", ::getpid()},
                         {"version", context_.version},
                         {"api_version", kApiVersion},
                         {"schema_version", store::current_schema_version()},
                         {"home", context_.layout.home},
                         {"gpu_mode", context_.queue.inventory().mode},
                         {"http", http_info()},
                         {"containment", context_.containment},
                         {"max_sweep_elements", context_.max_sweep_elements},
                         {"system", context_.peers.shared}};
  // What `gpuq check` judges: the actor's heartbeat (the API thread answering proves nothing
  // about the actor), GPUs a person must look at, lasting episodes, long condition waits.
  auto beat = store_->meta("heartbeat");
  int64_t beat_ms = 0;
  if (beat && *beat) std::from_chars((*beat)->data(), (*beat)->data() + (*beat)->size(), beat_ms);
  body["heartbeat_at_ms"] = beat_ms ? nlohmann::json(beat_ms) : nlohmann::json(nullptr);
  body["heartbeat_interval_ms"] = context_.queue.config().watch.heartbeat_ms;
  nlohmann::json gpus = nlohmann::json::array();
  for (auto& gpu : resource_objects(context_.queue.inventory().resources)) {
    gpus.push_back({{"name", gpu["name"]}, {"state", gpu["state"]}, {"attention", gpu["attention"]},
                    {"foreign", gpu["foreign"]}});
  }
  body["gpus"] = std::move(gpus);
  body["episodes"] = open_episodes(now);
  nlohmann::json conditions = nlohmann::json::array();
  for (const auto& w : waits->not_ready) {
    if (w.kind != daemon::JobWait::Kind::kCondition || w.since_ms == 0) continue;
    conditions.push_back({{"job", w.job_id}, {"since_ms", w.since_ms}, {"for_ms", now - w.since_ms},
                          {"why", w.text}});
  }
  body["waiting_on_conditions"] = std::move(conditions);
  // While the store refuses writes: since when, how many commits failed, the latest error.
  if (auto trouble = context_.queue.store_trouble()) {
    body["store_error"] = {{"since_ms", trouble->since_ms},
                           {"for_ms", now - trouble->since_ms},
                           {"failures", trouble->failures},
                           {"error", trouble->error}};
  } else {
    body["store_error"] = nullptr;
  }
  return json_response(http::status::ok, body);
}

Response Server::gpus() {
  const auto& inventory = context_.queue.inventory();
  return json_response(http::status::ok, {{"mode", inventory.mode},
                                          {"note", inventory.note},
                                          {"containment", context_.containment},
                                          {"resources", resource_objects(inventory.resources)}});
}

Response Server::status(const Target& target) {
  auto finished = decode_status_finished(target);
  if (!finished) return error_response(finished.error());
  bool active_only = target.param("active") == "1";
  // Every unfinished job (or a page of the pending ones) and only the latest finished ones:
  // the cost follows the queue, not the history kept.
  // One snapshot: a job that changes state meanwhile is listed once, as it was at one moment.
  Result<StatusList> list = fail(Code::kInternal, "no status list");
  auto read = store_->read_snapshot([&]() -> Status {
    list = status_list(target, active_only ? std::optional<size_t>(0) : *finished);
    return ok();
  });
  if (!read) return error_response(read.error());
  if (!list) return error_response(list.error());
  const auto& inventory = context_.queue.inventory();
  int64_t now = wall_now_ms();
  auto waits = context_.queue.waits();
  nlohmann::json lanes = nlohmann::json::array();
  for (const auto& lane : context_.queue.config().lanes) {
    nlohmann::json holders = nlohmann::json::array();
    for (const auto& [name, ids] : waits->lane_holders) {
      if (name == lane.name) holders = ids;
    }
    lanes.push_back({{"name", lane.name}, {"capacity", lane.capacity}, {"used", holders.size()},
                     {"excludes", lane.excludes}, {"jobs", holders}});
  }
  nlohmann::json body = {{"gpu_mode", inventory.mode},
                         {"gpu_note", inventory.note},
                         {"draining", waits->draining},
                         {"eta_note", list->eta_note},
                         {"lanes", std::move(lanes)},
                         {"watch", open_episodes(now)},
                         {"resources", resource_objects(inventory.resources)},
                         {"jobs", std::move(list->jobs)},
                         {"finished_total", list->finished_total},
                         {"arrays", std::move(list->arrays)}};
  if (list->pending_total) body["pending_total"] = *list->pending_total;
  if (list->held_total) body["held_total"] = *list->held_total;
  if (list->blocked_total) body["blocked_total"] = *list->blocked_total;
  return json_response(http::status::ok, body);
}

Response Server::show(const std::string& ref, const Caller& caller) {
  auto id = resolve(ref);
  if (!id) return error_response(id.error());
  auto job = store_->find_job(*id, true);
  if (!job) return error_response(job.error());
  if (!*job) return not_found(fmt::format("no job {}", ref));
  std::vector<Job> one{std::move(**job)};
  attach_reasons(one);
  nlohmann::json out = job_to_json(one[0]);
  attach_samples(one[0], out);
  const JobSpec& spec = one[0].spec;
  // What the job runs, for people (the Job page): the script snapshot taken at submit with its
  // arguments, or the command's words. Never in GET /v1/status, which lists many jobs. On a
  // shared box a script's text is its owner's to read, as its log is (docs/lab.md): others see
  // its name and arguments, and "text" null.
  if (!spec.script_text.empty()) {
    bool readable = caller.admin || caller.user == spec.user;
    out["script"] = {{"name", spec.script_name},
                     {"text", readable ? nlohmann::json(spec.script_text) : nlohmann::json(nullptr)},
                     {"args", spec.script_args}};
    out["argv"] = nullptr;
  } else {
    out["script"] = nullptr;
    out["argv"] = spec.argv;
  }
  // What the daemon schedules this job with while it is not finished (queue_submit.cc).
  if (spec.gpu_mem_mib == 0 && spec.gpus > 0 && !spec.name.empty() && !is_terminal(one[0].state)) {
    if (auto learned = store_->learned_footprint(spec.name); learned && *learned) {
      out["gpu_mem_learned"] = {{"mib", (*learned)->peak_mib}, {"runs", (*learned)->runs}};
    }
  }
  return json_response(http::status::ok, out);
}

Response Server::log(const std::string& ref, const Target& target) {
  auto id = resolve(ref);
  if (!id) return error_response(id.error());
  auto job = store_->find_job(*id, true);
  if (!job) return error_response(job.error());
  if (!*job) return not_found(fmt::format("no job {}", ref));
  auto query = decode_log_query(target);
  if (!query) return error_response(query.error());
  // One step's part of the log (api/step_log.h), or the whole log of a run.
  std::optional<StepSlice> slice;
  if (query->step) {
    auto found = step_slice(**job, *query->step, query->run);
    if (!found) return error_response(found.error());
    slice = *found;
  }
  const std::vector<Run>& runs = (*job)->runs;
  if (!slice && query->run &&
      std::none_of(runs.begin(), runs.end(), [&](const Run& r) { return r.number == *query->run; })) {
    return not_found(fmt::format("job {} has no run {} (it has run {} time{}); leave out run for "
                                 "its newest",
                                 (*job)->id, *query->run, runs.size(), runs.size() == 1 ? "" : "s"));
  }
  int run_number = slice ? slice->run : query->run.value_or(runs.empty() ? 0 : runs.back().number);
  Response res = text_response(http::status::ok, "");
  res.set("X-Gpuq-Run", std::to_string(run_number));
  res.set("X-Gpuq-Job-State", std::string(to_string((*job)->state)));
  if (slice) res.set("X-Gpuq-Step-State", slice->state);
  // Before its first run, a container job's log is its image's pull (docs/containers.md).
  // Opened with no link followed (daemon/job_log_file.h): on a shared box the log is the user's.
  auto log = daemon::JobLogFile::open(context_.layout, *id, run_number);
  if (run_number == 0 && (slice || !log.found())) {
    res.set("X-Gpuq-Log-Size", "0");
    return res;
  }
  // Else the whole file; read_in_slice reads nothing of a slice no run reached (run 0), so the
  // pull's log stands as run 1's would.
  const StepSlice part =
      slice ? *slice : StepSlice{std::max(run_number, 1), "", 0, std::nullopt};
  SliceRead read = read_in_slice(part, log.size(), query->offset, query->limit);
  res.body() = log.read(read.first, read.count);
  res.set("X-Gpuq-Log-Size", std::to_string(read.size));
  return res;
}

awaitable<Response> Server::events(const Target& target) {
  auto query = decode_events_query(target);
  if (!query) co_return error_response(query.error());
  int64_t after = query->after;
  int limit = static_cast<int>(query->limit);
  int64_t wait_ms = query->wait_ms;
  auto events = store_->events_after(after, limit);
  if (events && events->empty() && wait_ms > 0 && limit > 0 && !closed_) {
    asio::steady_timer timer(context_.api_ioc, std::chrono::milliseconds(wait_ms));
    waiters_.insert(&timer);
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(use_awaitable, ec));
    waiters_.erase(&timer);
    events = store_->events_after(after, limit);
  }
  if (!events) co_return error_response(events.error());
  auto last = store_->last_seq();
  nlohmann::json list = nlohmann::json::array();
  for (const Event& e : *events) list.push_back(event_to_json(e));
  co_return json_response(http::status::ok, {{"events", std::move(list)}, {"last_seq", last ? *last : 0}});
}

Response Server::metrics() {
  auto inputs = gather_metrics(*store_, context_.queue, context_.hook_lags);
  if (!inputs) return error_response(inputs.error());
  for (ConnectionClass cls : {ConnectionClass::kUnix, ConnectionClass::kTcpAnonymous,
                              ConnectionClass::kTcpAuthenticated, ConnectionClass::kEventStream}) {
    const auto& counts = pools_.counts(cls);
    inputs->connections.push_back({std::string(connection_class_name(cls)), counts.open,
                                   limits_.caps.cap(cls), counts.refused, counts.displaced});
  }
  Response res = text_response(http::status::ok, render_metrics(*inputs));
  res.set(http::field::content_type, std::string(kMetricsContentType));
  return res;
}

Response Server::hooks() {
  nlohmann::json list = nlohmann::json::array();
  if (context_.hooks != nullptr) {
    for (const daemon::HookStatus& status : context_.hooks->statuses()) {
      list.push_back(daemon::hook_status_to_json(status));
    }
  }
  return json_response(http::status::ok, {{"hooks", std::move(list)}});
}

Response Server::fleet() {
  std::optional<nlohmann::json> view = context_.fleet ? context_.fleet() : std::nullopt;
  if (!view) {
    return not_found("this daemon is in no fleet: start it with --fleet URL (docs/fleet.md); "
                     "gpuq fleet status reads a fleet's bucket without a daemon");
  }
  return json_response(http::status::ok, *view);
}

awaitable<Response> Server::submit(const Request& request, Caller caller) {
  auto body = parse_json_body(request.body());
  if (!body) co_return error_response(body.error());
  auto sweep = decode_sweep_submit(*body, context_.max_sweep_elements);
  if (!sweep) co_return error_response(sweep.error());
  if (*sweep) {
    if (auto allowed = may_submit(caller, (*sweep)->base); !allowed) co_return error_response(allowed.error());
    co_return co_await submit_sweep(std::move(**sweep), std::move(caller.user));
  }
  Result<JobSpec> spec = spec_from_json(*body);
  if (!spec) co_return error_response(spec.error());
  if (auto allowed = may_submit(caller, *spec); !allowed) co_return error_response(allowed.error());
  spec->user = std::move(caller.user);  // who sent it, never the body's say
  // Before the actor sees it, which must never wait on a file system (docs/architecture.md).
  std::vector<DirToCheck> cwd(1);  // built step by step: GCC 12 miscompiles braces in coroutines
  cwd[0].path = spec->cwd;
  auto dir = co_await dirs_.check(std::move(cwd), kDirCheckDeadline);
  if (!dir) co_return error_response(dir.error());
  daemon::Queue* queue = &context_.queue;
  auto shared_spec = std::make_shared<JobSpec>(std::move(*spec));
  auto work = [queue, shared_spec] { return queue->submit(std::move(*shared_spec)); };
  auto submitted = co_await on_actor<Result<daemon::Submitted>>(context_.actor_ioc, work);
  if (!submitted) co_return error_response(submitted.error());
  co_return json_response(submitted->existing ? http::status::ok : http::status::created,
                          job_to_json(submitted->job));
}

awaitable<Response> Server::submit_sweep(daemon::SweepRequest sweep, std::string user) {
  sweep.base.user = std::move(user);
  std::vector<DirToCheck> cwd(1);
  cwd[0].path = sweep.base.cwd;
  auto dir = co_await dirs_.check(std::move(cwd), kDirCheckDeadline);
  if (!dir) co_return error_response(dir.error());
  daemon::Queue* queue = &context_.queue;
  auto shared = std::make_shared<daemon::SweepRequest>(std::move(sweep));
  auto work = [queue, shared] { return queue->submit_sweep(std::move(*shared)); };
  auto submitted = co_await on_actor<Result<daemon::SweepSubmitted>>(context_.actor_ioc, work);
  if (!submitted) co_return error_response(submitted.error());
  const daemon::SweepSubmitted& s = *submitted;
  co_return json_response_with_list(s.existing ? http::status::ok : http::status::created,
                                    {{"array", array_to_json(s.array)}}, "jobs", s.element_ids.size(),
                                    [&s](size_t k) -> nlohmann::json {
                                      return {{"id", s.element_ids[k]}, {"name", s.element_names[k]}};
                                    });
}

awaitable<Response> Server::submit_plan(const Request& request, Caller caller) {
  auto decoded = decode_plan(request.body(), context_.max_sweep_elements);
  if (!decoded) co_return error_response(decoded.error());
  for (JobSpec& job : decoded->jobs) {
    if (auto allowed = may_submit(caller, job); !allowed) co_return error_response(allowed.error());
    // A plan that replaces jobs may replace only its sender's (an admin's: anyone's).
    if (decoded->replace && !caller.admin && !job.name.empty()) {
      auto existing = store_->find_job_by_name(job.name, false);
      if (!existing) co_return error_response(existing.error());
      if (*existing && (*existing)->spec.user != caller.user) {
        co_return error_response(permit(caller, Need::kOwner, "replace",
                                        fmt::format("job {} ('{}')", (*existing)->id, job.name),
                                        (*existing)->spec.user).error());
      }
    }
    job.user = caller.user;
  }
  std::vector<DirToCheck> cwds;
  for (const JobSpec& job : decoded->jobs) {
    bool seen = false;
    for (const auto& c : cwds) seen = seen || c.path == job.cwd;
    if (seen) continue;
    DirToCheck check;
    check.where = fmt::format("job '{}': ", job.name);
    check.path = job.cwd;
    cwds.push_back(std::move(check));
  }
  auto dir = co_await dirs_.check(std::move(cwds), kDirCheckDeadline);
  if (!dir) co_return error_response(dir.error());
  auto plan = std::make_shared<daemon::PlanRequest>(std::move(*decoded));
  daemon::Queue* queue = &context_.queue;
  auto work = [queue, plan] { return queue->submit_plan(std::move(*plan)); };
  auto outcome = co_await on_actor<Result<daemon::PlanOutcome>>(context_.actor_ioc, work);
  if (!outcome) co_return error_response(outcome.error());
  nlohmann::json jobs = nlohmann::json::array();
  for (const auto& e : outcome->jobs) {
    nlohmann::json entry = {{"name", e.name}, {"id", e.id}, {"result", e.result}};
    if (e.array) {  // a job array: "id" is the array's, and its elements follow (docs/api.md)
      entry["array"] = array_to_json(*e.array);
      nlohmann::json elements = nlohmann::json::array();
      for (size_t k = 0; k < e.element_ids.size(); ++k) {
        elements.push_back({{"id", e.element_ids[k]}, {"name", e.element_names[k]}});
      }
      entry["jobs"] = std::move(elements);
    }
    jobs.push_back(std::move(entry));
  }
  co_return json_response(http::status::ok, {{"jobs", std::move(jobs)}});
}

}  // namespace gpuq::api
