// SPDX-License-Identifier: Apache-2.0
// GET /v1/arrays/{ref} (docs/sweeps.md): an array or grid by name or id, with its elements'
// states, exit codes and counts and what its runs used, read from the API thread's own store;
// POST /v1/arrays/{ref}/move|cancel|hold|release|retry, which the queue actor carries out, each
// in one transaction.
#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "api/bodies.h"
#include "api/on_actor.h"
#include "api/server.h"
#include "base/time.h"
#include "model/json.h"

namespace gpuq::api {
namespace {

// When the elements ran and what they used: the first start, the last end (null while one
// runs), the wall time between them (up to now while one runs) and GPU-hours.
nlohmann::json usage_json(const store::Store::ArrayUsage& usage, int64_t now_ms) {
  auto time_or_null = [](int64_t ms) { return ms > 0 ? nlohmann::json(format_rfc3339(ms)) : nlohmann::json(); };
  bool running = usage.running > 0;
  int64_t end = running ? now_ms : usage.last_end_ms;
  return {{"first_start", time_or_null(usage.first_start_ms)},
          {"last_end", running ? nlohmann::json() : time_or_null(usage.last_end_ms)},
          {"running", usage.running},
          {"wall_ms", usage.first_start_ms > 0 ? std::max<int64_t>(0, end - usage.first_start_ms) : 0},
          {"gpu_hours", static_cast<double>(usage.gpu_ms) / 3'600'000.0}};
}

}  // namespace

Result<JobArray> Server::find_array(const std::string& ref) {
  int64_t id = 0;
  auto [end, error] = std::from_chars(ref.data(), ref.data() + ref.size(), id);
  bool numeric = !ref.empty() && error == std::errc() && end == ref.data() + ref.size();
  auto found = numeric ? store_->find_array(id) : store_->find_array_by_name(ref);
  if (!found) return tl::unexpected(found.error());
  if (!*found) return fail(Code::kNotFound, fmt::format("no array {}", numeric ? ref : "named '" + ref + "'"));
  return std::move(**found);
}

Response Server::array(const std::string& ref) {
  auto found = find_array(ref);
  if (!found) return error_response(found.error());
  const JobArray& array = *found;
  auto elements = store_->array_element_rows(array.id);
  if (!elements) return error_response(elements.error());
  int64_t now = wall_now_ms();
  auto usage = store_->array_usage(array.id, now);
  if (!usage) return error_response(usage.error());
  nlohmann::json counts = nlohmann::json::object();
  nlohmann::json jobs = nlohmann::json::array();
  for (const auto& element : *elements) {
    std::string state(to_string(element.state));
    counts[state] = counts.value(state, 0) + 1;
    jobs.push_back({{"id", element.id},
                    {"name", element.name},
                    {"state", state},
                    {"runs", element.runs},
                    {"exit_code", element.exit_code ? nlohmann::json(*element.exit_code) : nlohmann::json()},
                    {"signal", element.signal ? nlohmann::json(*element.signal) : nlohmann::json()}});
  }
  return json_response(http::status::ok, {{"array", array_to_json(array)},
                                          {"counts", counts},
                                          {"usage", usage_json(*usage, now)},
                                          {"jobs", jobs}});
}

boost::asio::awaitable<Response> Server::move_array(const std::string& ref, const Request& request) {
  auto found = find_array(ref);
  if (!found) co_return error_response(found.error());
  auto move = move_request(request);
  if (!move) co_return error_response(move.error());
  daemon::Queue* queue = &context_.queue;
  auto work = [queue, id = found->id, move = *move] { return queue->move_array(id, move); };
  auto moved = co_await on_actor<Result<std::vector<int64_t>>>(context_.actor_ioc, work);
  if (!moved) co_return error_response(moved.error());
  co_return json_response(http::status::ok, {{"array", array_to_json(*found)}, {"moved", *moved}});
}

boost::asio::awaitable<Response> Server::act_on_array(const std::string& ref, const std::string& verb,
                                        const Request& request) {
  auto found = find_array(ref);
  if (!found) co_return error_response(found.error());
  auto asked = decode_array_action(verb, request.body());
  if (!asked) co_return error_response(asked.error());
  daemon::Queue* queue = &context_.queue;
  auto work = [queue, id = found->id, asked = *asked] {
    return queue->act_on_array(id, asked.action, asked.from_start, /*with_jobs=*/!asked.brief);
  };
  auto acted = co_await on_actor<Result<daemon::ArrayActed>>(context_.actor_ioc, work);
  if (!acted) co_return error_response(acted.error());
  nlohmann::json refused = nlohmann::json::array();
  for (const auto& [id, why] : acted->refused) refused.push_back({{"id", id}, {"error", why}});
  nlohmann::json body = {{"array", array_to_json(*found)}, {"refused", std::move(refused)}};
  if (asked->brief) {
    body["ids"] = acted->ids;
  } else {
    nlohmann::json jobs = nlohmann::json::array();
    for (const Job& job : acted->jobs) jobs.push_back(job_to_json(job));
    body["jobs"] = std::move(jobs);
  }
  if (!acted->recorded) {
    // As for one job's cancel: it holds, and is recorded once the store can be written (202).
    body["cancel"] = "requested";
    body["note"] = "the store cannot be written now; the cancel holds and is recorded once it can be";
    co_return json_response(http::status::accepted, body);
  }
  co_return json_response(http::status::ok, body);
}

}  // namespace gpuq::api
