// The endpoints of docs/api.md: routing, queries on the read-only store, and commands handed to
// the queue actor.
#include <charconv>
#include <fstream>
#include <unistd.h>
#include <unordered_map>

#include <fmt/format.h>

#include "api/server.h"
#include "model/spec_json.h"
#include "model/event.h"
#include "model/json.h"

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

}  // namespace

awaitable<Response> Server::handle(const Request& request) {
  Target target = parse_target(std::string_view(request.target().data(), request.target().size()));
  const auto& s = target.segments;
  bool get = request.method() == http::verb::get;
  bool post = request.method() == http::verb::post;
  if (s.empty() || s[0] != "v1") co_return not_found("unknown path; the API lives under /v1 (docs/api.md)");
  if (s.size() == 2 && s[1] == "health" && get) co_return health();
  if (s.size() == 2 && s[1] == "status" && get) co_return status(target);
  if (s.size() == 2 && s[1] == "gpus" && get) co_return gpus();
  if (s.size() == 2 && s[1] == "events" && get) co_return co_await events(target);
  if (s.size() == 2 && s[1] == "jobs" && post) co_return co_await submit(request);
  if (s.size() == 3 && s[1] == "jobs" && get) co_return show(s[2]);
  if (s.size() == 4 && s[1] == "jobs" && s[3] == "cancel" && post) co_return co_await cancel(s[2]);
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
  std::unordered_map<int64_t, const sched::WaitReason*> by_id;
  for (const auto& w : waits->waits) by_id[w.job_id] = &w.reason;
  for (Job& job : jobs) {
    if (job.state != JobState::kPending) continue;
    auto it = by_id.find(job.id);
    job.reason = it != by_id.end() ? it->second->text(waits->snapshot)
                                   : (job.reason.empty() ? "waiting for the scheduler" : job.reason);
  }
}

std::vector<nlohmann::json> Server::resource_objects(const std::vector<Resource>& resources) {
  std::unordered_map<std::string, int64_t> holder;
  if (auto runs = store_->running_runs()) {
    for (const Run& run : *runs) {
      for (const auto& name : run.gpus) holder[name] = run.job_id;
    }
  }
  std::vector<nlohmann::json> out;
  for (const Resource& r : resources) {
    auto it = holder.find(r.name);
    out.push_back({{"name", r.name},
                   {"index", r.index ? nlohmann::json(*r.index) : nlohmann::json(nullptr)},
                   {"uuid", r.uuid},
                   {"model", r.model},
                   {"memory_total_mib", r.memory_total_mib},
                   {"memory_used_mib", r.memory_used_mib},
                   {"state", it == holder.end() ? "free" : "busy"},
                   {"job", it == holder.end() ? nlohmann::json(nullptr) : nlohmann::json(it->second)}});
  }
  return out;
}

Response Server::health() {
  return json_response(http::status::ok, {{"ok", true},
                                          {"pid", ::getpid()},
                                          {"version", context_.version},
                                          {"home", context_.layout.home},
                                          {"gpu_mode", context_.queue.inventory().mode}});
}

Response Server::gpus() {
  const auto& inventory = context_.queue.inventory();
  return json_response(http::status::ok, {{"mode", inventory.mode},
                                          {"note", inventory.note},
                                          {"resources", resource_objects(inventory.resources)}});
}

Response Server::status(const Target& target) {
  bool active_only = target.param("active") == "1";
  auto jobs = store_->list_jobs(active_only, true);
  if (!jobs) return error_response(jobs.error());
  attach_reasons(*jobs);
  nlohmann::json list = nlohmann::json::array();
  for (const Job& job : *jobs) list.push_back(job_to_json(job));
  const auto& inventory = context_.queue.inventory();
  return json_response(http::status::ok, {{"gpu_mode", inventory.mode},
                                          {"gpu_note", inventory.note},
                                          {"resources", resource_objects(inventory.resources)},
                                          {"jobs", std::move(list)}});
}

Response Server::show(const std::string& ref) {
  auto id = resolve(ref);
  if (!id) return error_response(id.error());
  auto job = store_->find_job(*id, true);
  if (!job) return error_response(job.error());
  if (!*job) return not_found(fmt::format("no job {}", ref));
  std::vector<Job> one{std::move(**job)};
  attach_reasons(one);
  return json_response(http::status::ok, job_to_json(one[0]));
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
