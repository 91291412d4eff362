// The endpoints of docs/api.md: routing, queries on the read-only store, and commands handed to
// the queue actor.
#include <algorithm>
#include <charconv>
#include <iterator>
#include <fstream>
#include <unistd.h>
#include <unordered_map>

#include <fmt/format.h>

#include "api/gpu_view.h"
#include "api/metrics.h"
#include "api/server.h"
#include "model/spec_json.h"
#include "model/event.h"
#include "model/json.h"
#include "base/time.h"

namespace gpuq::api {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;

namespace {

// Runs `fn` on the queue actor's thread; the awaiting coroutine resumes on its own executor
// with the result. Deliberately not a coroutine itself: GCC 12 mishandles lambdas with
// captures that live in coroutine frames, so the work travels in plain handlers.
template <class R, class Fn>
auto on_actor(asio::io_context& actor, Fn fn) {
  return asio::async_initiate<const asio::use_awaitable_t<>&, void(R)>(
      [&actor](auto handler, Fn work) {
        asio::post(actor, [handler = std::move(handler), work = std::move(work)]() mutable {
          R result = work();
          auto executor = asio::get_associated_executor(handler);
          asio::post(executor, [handler = std::move(handler), result = std::move(result)]() mutable {
            std::move(handler)(std::move(result));
          });
        });
      },
      use_awaitable, std::move(fn));
}

int64_t int_param(const Target& target, std::string_view key, int64_t fallback) {
  std::string text = target.param(key);
  int64_t value = fallback;
  if (!text.empty()) std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

Response not_found(const std::string& what) {
  return error_response({Code::kNotFound, what});
}

// How many finished jobs GET /v1/status lists without ?finished=: as many as `gpuq status`
// shows, so its plain call gets what it prints.
constexpr size_t kStatusFinished = 10;

// ?finished=N (the latest N finished jobs), ?finished=all (nullopt), or the default.
Result<std::optional<size_t>> finished_param(const Target& target) {
  std::string text = target.param("finished");
  if (text.empty()) return std::optional<size_t>(kStatusFinished);
  if (text == "all") return std::optional<size_t>();
  size_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return fail(Code::kInvalidArgument,
                fmt::format("finished={}: give a number of finished jobs to list, or all", text));
  }
  return std::optional<size_t>(value);
}

}  // namespace

awaitable<Response> Server::handle(const Request& request) {
  Target target = parse_target(std::string_view(request.target().data(), request.target().size()));
  const auto& s = target.segments;
  bool get = request.method() == http::verb::get;
  bool post = request.method() == http::verb::post;
  if (s.size() == 1 && s[0] == "metrics" && get) co_return metrics();  // where Prometheus looks
  if (s.empty() || s[0] != "v1") co_return not_found("unknown path; the API lives under /v1 (docs/api.md)");
  if (s.size() == 2 && s[1] == "health" && get) co_return health();
  if (s.size() == 2 && s[1] == "status" && get) co_return status(target);
  if (s.size() == 2 && s[1] == "gpus" && get) co_return gpus();
  if (s.size() == 2 && s[1] == "hooks" && get) co_return hooks();
  if (s.size() == 4 && s[1] == "gpus" && s[3] == "release" && post) co_return co_await release_gpu(s[2], request);
  if (s.size() == 2 && s[1] == "events" && get) co_return co_await events(target);
  if (s.size() == 2 && s[1] == "jobs" && post) co_return co_await submit(request);
  if (s.size() == 3 && s[1] == "jobs" && get) co_return show(s[2]);
  if (s.size() == 4 && s[1] == "jobs" && s[3] == "cancel" && post) co_return co_await cancel(s[2]);
  if (s.size() == 4 && s[1] == "jobs" && post &&
      (s[3] == "hold" || s[3] == "release" || s[3] == "retry" || s[3] == "move")) {
    co_return co_await control(s[2], s[3], request);
  }
  if (s.size() == 2 && s[1] == "plans" && post) co_return co_await submit_plan(request);
  if (s.size() == 2 && (s[1] == "drain" || s[1] == "undrain") && post) co_return co_await drain(s[1] == "drain");
  if (s.size() == 4 && s[1] == "jobs" && s[3] == "log" && get) co_return log(s[2], target);
  co_return not_found(fmt::format("no endpoint {} {}", std::string(request.method_string()),
                                  std::string(request.target())));
}

Result<int64_t> Server::resolve(const std::string& ref) {
  int64_t id = 0;
  auto [end, ec] = std::from_chars(ref.data(), ref.data() + ref.size(), id);
  if (ec == std::errc() && end == ref.data() + ref.size()) return id;
  auto job = store_->find_job_by_name(ref, false);
  if (!job) return tl::unexpected(job.error());
  if (!*job) return fail(Code::kNotFound, fmt::format("no job named '{}'", ref));
  return (*job)->id;
}

void Server::attach_reasons(std::vector<Job>& jobs) {
  auto waits = context_.queue.waits();
  int64_t now = wall_now_ms();
  std::unordered_map<int64_t, const sched::WaitReason*> by_id;
  std::unordered_map<int64_t, const daemon::JobWait*> not_ready;
  if (jobs.size() > 8) {
    for (const auto& w : waits->waits) by_id[w.job_id] = &w.reason;
    for (const auto& w : waits->not_ready) not_ready[w.job_id] = &w;
  }
  for (Job& job : jobs) {
    if (job.state != JobState::kPending && job.state != JobState::kHeld) continue;
    std::string reason;
    if (jobs.size() > 8) {
      if (auto it = not_ready.find(job.id); it != not_ready.end()) reason = it->second->render(now);
      if (auto it = by_id.find(job.id); it != by_id.end()) reason = it->second->text(waits->snapshot);
    } else {
      reason = waits->reason(job.id, now);
    }
    if (reason.empty()) reason = job.reason.empty() ? "waiting for the scheduler" : job.reason;
    job.reason = reason;
  }
}

std::vector<nlohmann::json> Server::resource_objects(const std::vector<Resource>& resources) {
  auto runs = store_->running_runs();
  auto views = gpu_views(resources, runs ? *runs : std::vector<Run>{}, *context_.queue.waits());
  std::vector<nlohmann::json> out;
  for (size_t slot = 0; slot < resources.size(); ++slot) {
    const Resource& r = resources[slot];
    const daemon::GpuHealth& health = views[slot].health;
    out.push_back({{"name", r.name},
                   {"index", r.index ? nlohmann::json(*r.index) : nlohmann::json(nullptr)},
                   {"uuid", r.uuid},
                   {"model", r.model},
                   {"memory_total_mib", r.memory_total_mib},
                   {"memory_used_mib", health.memory_used_mib >= 0 ? health.memory_used_mib : r.memory_used_mib},
                   {"utilization", health.utilization >= 0 ? nlohmann::json(health.utilization) : nlohmann::json(nullptr)},
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
                         {"last_look_us", context_.queue.last_look_us()},
                         {"active_jobs", waits->active_jobs},
                         {"pid", ::getpid()},
                         {"version", context_.version},
                         {"home", context_.layout.home},
                         {"gpu_mode", context_.queue.inventory().mode}};
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
  return json_response(http::status::ok, body);
}

Response Server::gpus() {
  const auto& inventory = context_.queue.inventory();
  return json_response(http::status::ok, {{"mode", inventory.mode},
                                          {"note", inventory.note},
                                          {"resources", resource_objects(inventory.resources)}});
}

Response Server::status(const Target& target) {
  auto finished = finished_param(target);
  if (!finished) return error_response(finished.error());
  bool active_only = target.param("active") == "1";
  // Every unfinished job and only the latest finished ones: the cost follows the queue, not
  // the history kept.
  auto jobs = store_->status_jobs(active_only ? std::optional<size_t>(0) : *finished);
  if (!jobs) return error_response(jobs.error());
  attach_reasons(jobs->active);
  const auto& inventory = context_.queue.inventory();
  int64_t now = wall_now_ms();
  auto seq = store_->last_seq();
  const auto& etas = etas_.get(jobs->active, inventory, context_.queue.config(), now, seq ? *seq : 0);
  std::vector<Job> all;
  all.reserve(jobs->active.size() + jobs->finished.size());
  std::merge(std::make_move_iterator(jobs->active.begin()), std::make_move_iterator(jobs->active.end()),
             std::make_move_iterator(jobs->finished.begin()), std::make_move_iterator(jobs->finished.end()),
             std::back_inserter(all), [](const Job& a, const Job& b) { return a.id < b.id; });
  nlohmann::json list = nlohmann::json::array();
  for (const Job& job : all) {
    nlohmann::json j = job_to_json(job);
    if (job.state == JobState::kPending) {
      auto it = etas.start_ms.find(job.id);
      j["eta"] = it == etas.start_ms.end() ? nlohmann::json(nullptr) : nlohmann::json(format_rfc3339(std::max(now, it->second)));
    }
    list.push_back(std::move(j));
  }
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
  return json_response(http::status::ok, {{"gpu_mode", inventory.mode},
                                          {"gpu_note", inventory.note},
                                          {"draining", waits->draining},
                                          {"eta_note", etas.note},
                                          {"lanes", std::move(lanes)},
                                          {"watch", open_episodes(now)},
                                          {"resources", resource_objects(inventory.resources)},
                                          {"jobs", std::move(list)},
                                          {"finished_total", jobs->finished_total}});
}

Response Server::show(const std::string& ref) {
  auto id = resolve(ref);
  if (!id) return error_response(id.error());
  auto job = store_->find_job(*id, true);
  if (!job) return error_response(job.error());
  if (!*job) return not_found(fmt::format("no job {}", ref));
  std::vector<Job> one{std::move(**job)};
  attach_reasons(one);
  nlohmann::json out = job_to_json(one[0]);
  const JobSpec& spec = one[0].spec;
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
  int run_number = static_cast<int>(int_param(target, "run", (*job)->runs.empty() ? 0 : (*job)->runs.back().number));
  Response res = text_response(http::status::ok, "");
  res.set("X-Gpuq-Run", std::to_string(run_number));
  res.set("X-Gpuq-Job-State", std::string(to_string((*job)->state)));
  if (run_number == 0) {
    res.set("X-Gpuq-Log-Size", "0");
    return res;
  }
  std::string path = context_.layout.run_dir(*id, run_number) + "/output.log";
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  int64_t size = in ? static_cast<int64_t>(in.tellg()) : 0;
  int64_t offset = std::clamp<int64_t>(int_param(target, "offset", 0), 0, size);
  int64_t limit = std::clamp<int64_t>(int_param(target, "limit", 4 << 20), 0, 16 << 20);
  int64_t count = std::min(limit, size - offset);
  if (in && count > 0) {
    res.body().resize(static_cast<size_t>(count));
    in.seekg(offset);
    in.read(res.body().data(), count);
  }
  res.set("X-Gpuq-Log-Size", std::to_string(size));
  return res;
}

awaitable<Response> Server::events(const Target& target) {
  int64_t after = int_param(target, "after", 0);
  int limit = static_cast<int>(std::clamp<int64_t>(int_param(target, "limit", 1000), 0, 10000));
  int64_t wait_ms = std::clamp<int64_t>(int_param(target, "wait_ms", 0), 0, 60'000);
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

awaitable<Response> Server::submit(const Request& request) {
  nlohmann::json body = nlohmann::json::parse(request.body(), nullptr, false);
  if (body.is_discarded()) co_return error_response({Code::kInvalidArgument, "the body is not valid JSON"});
  auto spec = spec_from_json(body);
  if (!spec) co_return error_response(spec.error());
  daemon::Queue* queue = &context_.queue;
  auto shared_spec = std::make_shared<JobSpec>(std::move(*spec));
  auto work = [queue, shared_spec] { return queue->submit(std::move(*shared_spec)); };
  auto submitted = co_await on_actor<Result<daemon::Submitted>>(context_.actor_ioc, work);
  if (!submitted) co_return error_response(submitted.error());
  co_return json_response(submitted->existing ? http::status::ok : http::status::created,
                          job_to_json(submitted->job));
}

awaitable<Response> Server::release_gpu(const std::string& gpu, const Request& request) {
  nlohmann::json body = nlohmann::json::parse(request.body().empty() ? "{}" : request.body(), nullptr, false);
  if (!body.is_object() || body.value("attention", false) != true || body.size() != 1) {
    co_return error_response({Code::kInvalidArgument,
                              "release a GPU with {\"attention\": true}: it says a person checked "
                              "that nothing is left on it (gpuq release --attention GPU)"});
  }
  daemon::Queue* queue = &context_.queue;
  auto work = [queue, gpu] { return queue->release_attention(gpu); };
  auto released = co_await on_actor<Result<nlohmann::json>>(context_.actor_ioc, work);
  if (!released) co_return error_response(released.error());
  co_return json_response(http::status::ok, *released);
}

awaitable<Response> Server::control(const std::string& ref, const std::string& verb,
                                    const Request& request) {
  auto id = resolve(ref);
  if (!id) co_return error_response(id.error());
  daemon::Queue* queue = &context_.queue;
  int64_t job_id = *id;
  if (verb == "move") {
    nlohmann::json body = nlohmann::json::parse(request.body(), nullptr, false);
    if (!body.is_object() || body.size() != 1) {
      co_return error_response({Code::kInvalidArgument,
                                "move takes one of {\"before\": ref}, {\"after\": ref}, {\"top\": true}, "
                                "{\"bottom\": true}, {\"priority\": P}"});
    }
    daemon::MoveRequest move;
    using W = daemon::MoveRequest::Where;
    if (body.contains("before") || body.contains("after")) {
      move.where = body.contains("before") ? W::kBefore : W::kAfter;
      const auto& other = body.contains("before") ? body["before"] : body["after"];
      auto other_id = resolve(other.is_string() ? other.get<std::string>() : other.dump());
      if (!other_id) co_return error_response(other_id.error());
      move.other = *other_id;
    } else if (body.contains("top")) {
      move.where = W::kTop;
    } else if (body.contains("bottom")) {
      move.where = W::kBottom;
    } else if (body.contains("priority")) {
      move.where = W::kPriority;
      const auto& p = body["priority"];
      auto priority = parse_priority(p.is_string() ? p.get<std::string>() : p.dump());
      if (!priority) co_return error_response(priority.error());
      move.priority = *priority;
    } else {
      co_return error_response({Code::kInvalidArgument, "unknown move: " + body.dump()});
    }
    auto work = [queue, job_id, move] { return queue->move(job_id, move); };
    auto job = co_await on_actor<Result<Job>>(context_.actor_ioc, work);
    if (!job) co_return error_response(job.error());
    co_return json_response(http::status::ok, job_to_json(*job));
  }
  auto work = [queue, job_id, verb] {
    if (verb == "hold") return queue->hold(job_id);
    if (verb == "release") return queue->release(job_id);
    return queue->retry(job_id);
  };
  auto job = co_await on_actor<Result<Job>>(context_.actor_ioc, work);
  if (!job) co_return error_response(job.error());
  co_return json_response(http::status::ok, job_to_json(*job));
}

awaitable<Response> Server::drain(bool draining) {
  daemon::Queue* queue = &context_.queue;
  auto work = [queue, draining] { return queue->set_draining(draining); };
  bool now = co_await on_actor<bool>(context_.actor_ioc, work);
  co_return json_response(http::status::ok, {{"draining", now}});
}

awaitable<Response> Server::submit_plan(const Request& request) {
  nlohmann::json body = nlohmann::json::parse(request.body(), nullptr, false);
  if (!body.is_object()) co_return error_response({Code::kInvalidArgument, "the body is not a JSON object"});
  for (const auto& [key, value] : body.items()) {
    if (key != "jobs" && key != "reservations" && key != "replace") {
      co_return error_response({Code::kInvalidArgument,
                                "unknown field '" + key + "' in a plan; known: jobs, reservations, replace"});
    }
  }
  auto plan = std::make_shared<daemon::PlanRequest>();
  plan->replace = body.value("replace", false);
  if (!body.contains("jobs") || !body["jobs"].is_array() || body["jobs"].empty()) {
    co_return error_response({Code::kInvalidArgument, "a plan needs a non-empty 'jobs' list"});
  }
  for (const auto& entry : body["jobs"]) {
    auto spec = spec_from_json(entry);
    if (!spec) co_return error_response(spec.error());
    plan->jobs.push_back(std::move(*spec));
  }
  if (body.contains("reservations")) {
    if (!body["reservations"].is_array()) co_return error_response({Code::kInvalidArgument, "'reservations' must be a list"});
    size_t index = 0;
    for (const auto& r : body["reservations"]) {
      daemon::PlanReservation reservation;
      try {
        reservation.name = r.value("name", "r" + std::to_string(index));
        reservation.gpus = r.at("gpus").get<std::vector<int>>();
        reservation.jobs = r.at("jobs").get<std::vector<std::string>>();
      } catch (const nlohmann::json::exception&) {
        co_return error_response({Code::kInvalidArgument,
                                  "each reservation is {\"name\", \"gpus\": [indices], \"jobs\": [names]}"});
      }
      plan->reservations.push_back(std::move(reservation));
      ++index;
    }
  }
  daemon::Queue* queue = &context_.queue;
  auto work = [queue, plan] { return queue->submit_plan(std::move(*plan)); };
  auto outcome = co_await on_actor<Result<daemon::PlanOutcome>>(context_.actor_ioc, work);
  if (!outcome) co_return error_response(outcome.error());
  nlohmann::json jobs = nlohmann::json::array();
  for (const auto& e : outcome->jobs) jobs.push_back({{"name", e.name}, {"id", e.id}, {"result", e.result}});
  co_return json_response(http::status::ok, {{"jobs", std::move(jobs)}});
}

awaitable<Response> Server::cancel(const std::string& ref) {
  auto id = resolve(ref);
  if (!id) co_return error_response(id.error());
  daemon::Queue* queue = &context_.queue;
  int64_t job_id = *id;
  auto work = [queue, job_id] { return queue->cancel(job_id); };
  auto job = co_await on_actor<Result<Job>>(context_.actor_ioc, work);
  if (!job) co_return error_response(job.error());
  co_return json_response(http::status::ok, job_to_json(*job));
}

}  // namespace gpuq::api
