// SPDX-License-Identifier: Apache-2.0
// The acts on jobs and on the daemon (docs/api.md, "Endpoints"): a job's hold, release, retry
// and move, its cancel, a GPU's release from attention, drain and undrain, and gc; each handed
// to the queue actor (on_actor.h), a waiting job answered with its reason.
#include <fmt/format.h>

#include "api/bodies.h"
#include "api/on_actor.h"
#include "api/server.h"
#include "model/json.h"

namespace gpuq::api {

namespace asio = boost::asio;
using asio::awaitable;

awaitable<Response> Server::release_gpu(const std::string& gpu, const Request& request) {
  if (auto body = decode_release(request.body()); !body) co_return error_response(body.error());
  daemon::Queue* queue = &context_.queue;
  auto work = [queue, gpu] { return queue->release_attention(gpu); };
  auto released = co_await on_actor<Result<nlohmann::json>>(context_.actor_ioc, work);
  if (!released) co_return error_response(released.error());
  co_return json_response(http::status::ok, *released);
}

Result<daemon::MoveRequest> Server::move_request(const Request& request) {
  auto body = decode_move(request.body());
  if (!body) return tl::unexpected(body.error());
  daemon::MoveRequest move{body->where, 0, body->priority};
  if (!body->other.empty()) {
    auto other_id = resolve(body->other);
    if (!other_id) return tl::unexpected(other_id.error());
    move.other = *other_id;
  }
  return move;
}

awaitable<Response> Server::control(const std::string& ref, const std::string& verb,
                                    const Request& request) {
  auto id = resolve(ref);
  if (!id) co_return error_response(id.error());
  daemon::Queue* queue = &context_.queue;
  int64_t job_id = *id;
  if (verb == "move") {
    auto decoded = move_request(request);
    if (!decoded) co_return error_response(decoded.error());
    daemon::MoveRequest move = *decoded;
    auto work = [queue, job_id, move] { return queue->move(job_id, move); };
    auto job = co_await on_actor<Result<Job>>(context_.actor_ioc, work);
    if (!job) co_return error_response(job.error());
    co_return json_response(http::status::ok, job_with_reason(std::move(*job)));
  }
  bool from_start = false;
  if (verb == "retry") {
    auto decoded = decode_job_retry(request.body());
    if (!decoded) co_return error_response(decoded.error());
    from_start = *decoded;
  }
  auto work = [queue, job_id, verb, from_start] {
    if (verb == "hold") return queue->hold(job_id);
    if (verb == "release") return queue->release(job_id);
    return queue->retry(job_id, from_start);
  };
  auto job = co_await on_actor<Result<Job>>(context_.actor_ioc, work);
  if (!job) co_return error_response(job.error());
  co_return json_response(http::status::ok, job_with_reason(std::move(*job)));
}

nlohmann::json Server::job_with_reason(Job job) {
  std::vector<Job> one{std::move(job)};
  attach_reasons(one);  // a released or retried job waits: its answer says for what
  return job_to_json(one[0]);
}

awaitable<Response> Server::drain(bool draining) {
  daemon::Queue* queue = &context_.queue;
  auto work = [queue, draining] { return queue->set_draining(draining); };
  auto now = co_await on_actor<Result<bool>>(context_.actor_ioc, work);
  if (!now) co_return error_response(now.error());
  co_return json_response(http::status::ok, {{"draining", *now}});
}

awaitable<Response> Server::gc(const Request& request) {
  auto body = decode_gc(request.body());
  if (!body) co_return error_response(body.error());
  daemon::Queue* queue = &context_.queue;
  bool dry_run = body->dry_run;
  auto work = [queue, dry_run](std::function<void(Result<daemon::GcReport>)> done) {
    queue->gc(dry_run, std::move(done));
  };
  auto report = co_await on_actor_later<Result<daemon::GcReport>>(context_.actor_ioc, work);
  if (!report) co_return error_response(report.error());
  co_return json_response(http::status::ok, daemon::gc_report_to_json(*report));
}

awaitable<Response> Server::cancel(const std::string& ref) {
  auto id = resolve(ref);
  if (!id) co_return error_response(id.error());
  daemon::Queue* queue = &context_.queue;
  int64_t job_id = *id;
  auto work = [queue, job_id] { return queue->cancel(job_id); };
  auto cancelled = co_await on_actor<Result<daemon::Cancelled>>(context_.actor_ioc, work);
  if (!cancelled) co_return error_response(cancelled.error());
  nlohmann::json body = job_to_json(cancelled->job);
  if (!cancelled->recorded) {
    // The cancel holds (a running job was told to stop; a waiting one never starts), but the
    // store could not record it yet: 202, and the daemon records it when it can.
    body["cancel"] = "requested";
    body["note"] = "the store cannot be written now; the cancel holds and is recorded once it can be";
    co_return json_response(http::status::accepted, body);
  }
  co_return json_response(http::status::ok, body);
}

}  // namespace gpuq::api
