// SPDX-License-Identifier: Apache-2.0
// Submit, show, cancel and logs of the fleet client; the shared writes of client_internal.h.
#include "fleet/client.h"

#include <fmt/format.h>

#include "fleet/client_internal.h"

namespace gpuq::fleet {
namespace detail {

Status bump_signal(ObjectStore& store) {
  auto written = store.put(std::string(keys::kSignal), random_token());
  if (!written) return tl::unexpected(written.error());
  return ok();
}

Status create_entry(ObjectStore& store, const std::string& key, std::string_view id) {
  auto created = store.create(key, nlohmann::json{{"id", id}}.dump());
  if (!created && !is_code(created.error(), Code::kConflict)) return tl::unexpected(created.error());
  return ok();
}

int64_t store_age_ms(int64_t store_now_ms, int64_t modified_ms) {
  if (store_now_ms <= 0 || modified_ms <= 0) return -1;
  return store_now_ms > modified_ms ? store_now_ms - modified_ms : 0;
}

Result<bool> end_unclaimed(ObjectStore& store, const FleetJob& job, std::string reason,
                           int64_t now_ms) {
  Claim claim;
  claim.job = job.id;
  claim.token = random_token();
  claim.state = std::string(kCancelled);
  claim.reason = std::move(reason);
  claim.updated_ms = now_ms;
  auto created = store.create(keys::claim(job.id), to_json(claim).dump());
  if (!created) {
    if (is_code(created.error(), Code::kConflict)) return false;
    return tl::unexpected(created.error());
  }
  GPUQ_FLEET_TRY(store.remove(job.entry()));
  auto ended = store.put(ended_key(now_ms, job.id), nlohmann::json{{"id", job.id}}.dump());
  if (!ended) return tl::unexpected(ended.error());
  return true;
}

Result<bool> cancel_requested(ObjectStore& store, std::string_view id) {
  auto marker = store.get(keys::cancel(id));
  if (marker) return true;
  if (is_code(marker.error(), Code::kNotFound)) return false;
  return tl::unexpected(marker.error());
}

}  // namespace detail

using detail::is_code;

namespace {

// The JSON of an object, or nullopt when the key does not exist.
Result<std::optional<Object>> get_if_present(ObjectStore& store, const std::string& key) {
  auto object = store.get(key);
  if (object) return std::optional<Object>(std::move(*object));
  if (is_code(object.error(), Code::kNotFound)) return std::optional<Object>();
  return tl::unexpected(object.error());
}

// names/NAME → the id it holds.
Result<std::optional<std::string>> name_target(ObjectStore& store, std::string_view name) {
  std::string key = keys::name(name);
  auto object = get_if_present(store, key);
  if (!object) return tl::unexpected(object.error());
  if (!*object) return std::optional<std::string>();
  auto doc = parse_object(key, (*object)->body);
  if (!doc) return tl::unexpected(doc.error());
  auto id = doc->find("id");
  if (!doc->is_object() || id == doc->end() || !id->is_string() ||
      !looks_like_job_id(id->get<std::string>())) {
    return fail(Code::kCorruption, fmt::format("{}: {} holds no job id", store.describe(), key));
  }
  return std::optional<std::string>(id->get<std::string>());
}

// Whether a resubmit is the stored job: the same work, where a pinned job that `fleet move`
// re-pinned to another node still counts as the same.
bool same_submission(const FleetJob& stored, const FleetJob& resubmit) {
  FleetJob candidate = resubmit;
  if (!stored.node.empty() && !candidate.node.empty()) candidate.node = stored.node;
  return same_fleet_work(stored, candidate);
}

std::string queue_text(const FleetJob& job) {
  return job.node.empty() ? fmt::format("class {}", job.klass) : fmt::format("node {}", job.node);
}

Status check_submission(ObjectStore& store, const FleetJob& job) {
  if (!looks_like_job_id(job.id)) {
    return fail(Code::kInternal, fmt::format("'{}' is not a fleet job id", clip_for_message(job.id)));
  }
  if (job.klass.empty() == job.node.empty()) {
    return fail(Code::kInvalidArgument, "a fleet job goes to exactly one of a class and a node");
  }
  if (!job.name.empty()) GPUQ_FLEET_TRY(check_name("name", job.name));
  if (!job.klass.empty()) GPUQ_FLEET_TRY(check_name("class", job.klass));
  if (!job.node.empty()) GPUQ_FLEET_TRY(check_name("node", job.node));
  for (const auto& dep : job.after) {
    auto target = resolve_job(store, dep.target);
    if (!target) {
      if (!is_code(target.error(), Code::kNotFound)) return tl::unexpected(target.error());
      return fail(Code::kNotFound,
                  fmt::format("after '{}': no fleet job has that name or id in {}; submit it "
                              "first",
                              clip_for_message(dep.target), store.describe()));
    }
  }
  return ok();
}

// A submit of a name that is taken by a job with a spec: the same work is that job (with its
// entry written when a half-done submit left it out and no node has claimed it); other work is
// a conflict.
Result<SubmitResult> resubmit(ObjectStore& store, const FleetJob& stored, const FleetJob& job) {
  if (!same_submission(stored, job)) {
    return fail(Code::kConflict,
                fmt::format("the fleet job named '{}' is {} ({}) with other work (script, "
                            "arguments, headers, --env, queue or after differ); give another "
                            "--name, or cancel {} first",
                            job.name, stored.id, queue_text(stored), stored.id));
  }
  SubmitResult result{stored, true, false};
  auto claim = read_claim(store, stored.id);
  if (!claim) return tl::unexpected(claim.error());
  if (*claim) return result;
  auto entry = get_if_present(store, stored.entry());
  if (!entry) return tl::unexpected(entry.error());
  if (*entry) return result;
  GPUQ_FLEET_TRY(detail::create_entry(store, stored.entry(), stored.id));
  GPUQ_FLEET_TRY(detail::bump_signal(store));
  result.repaired = true;
  return result;
}

}  // namespace

Result<FleetJob> read_job(ObjectStore& store, std::string_view id) {
  std::string key = keys::spec(id);
  auto object = store.get(key);
  if (!object) {
    if (!is_code(object.error(), Code::kNotFound)) return tl::unexpected(object.error());
    return fail(Code::kNotFound, fmt::format("no fleet job {} in {}", id, store.describe()));
  }
  auto doc = parse_object(key, object->body);
  if (!doc) return tl::unexpected(doc.error());
  auto job = fleet_job_from_json(*doc);
  if (!job) return fail(Code::kCorruption, fmt::format("{}: {}", key, job.error().message));
  return job;
}

Result<std::optional<ClaimRead>> read_claim(ObjectStore& store, std::string_view id) {
  std::string key = keys::claim(id);
  auto object = get_if_present(store, key);
  if (!object) return tl::unexpected(object.error());
  if (!*object) return std::optional<ClaimRead>();
  auto doc = parse_object(key, (*object)->body);
  if (!doc) return tl::unexpected(doc.error());
  auto claim = claim_from_json(*doc);
  if (!claim) return fail(Code::kCorruption, fmt::format("{}: {}", key, claim.error().message));
  return std::optional<ClaimRead>(ClaimRead{
      std::move(*claim), (*object)->etag,
      detail::store_age_ms((*object)->store_now_ms, (*object)->modified_ms)});
}

Result<std::string> resolve_job(ObjectStore& store, std::string_view ref) {
  if (check_name("name", ref)) {
    auto id = name_target(store, ref);
    if (!id) return tl::unexpected(id.error());
    if (*id) return **id;
  }
  if (looks_like_job_id(ref)) {
    auto spec = store.get(keys::spec(ref));
    if (spec) return std::string(ref);
    if (!is_code(spec.error(), Code::kNotFound)) return tl::unexpected(spec.error());
  }
  return fail(Code::kNotFound, fmt::format("no fleet job has the name or id '{}' in {}",
                                           clip_for_message(ref), store.describe()));
}

std::string job_state(const std::optional<Claim>& claim) {
  return claim ? claim->state : std::string(kQueued);
}

Result<SubmitResult> submit(ObjectStore& store, FleetJob job) {
  GPUQ_FLEET_TRY(check_submission(store, job));
  bool repaired = false;
  if (!job.name.empty()) {
    std::string key = keys::name(job.name);
    auto created = store.create(key, nlohmann::json{{"id", job.id}}.dump());
    if (!created && !is_code(created.error(), Code::kConflict)) return tl::unexpected(created.error());
    if (!created) {
      auto id = name_target(store, job.name);
      if (!id) return tl::unexpected(id.error());
      if (!*id) return fail(Code::kUnavailable, fmt::format("{}: {} vanished while submitting; "
                                                            "submit again", store.describe(), key));
      auto stored = read_job(store, **id);
      if (stored) return resubmit(store, *stored, job);
      if (!is_code(stored.error(), Code::kNotFound)) return tl::unexpected(stored.error());
      job.id = **id;  // an earlier submit stopped after the name: finish it under its id
      repaired = true;
    }
  }
  auto spec = store.create(keys::spec(job.id), to_json(job).dump());
  if (!spec) {
    if (!is_code(spec.error(), Code::kConflict)) return tl::unexpected(spec.error());
    auto stored = read_job(store, job.id);  // another repair of the same name got there first
    if (!stored) return tl::unexpected(stored.error());
    return resubmit(store, *stored, job);
  }
  GPUQ_FLEET_TRY(detail::create_entry(store, job.entry(), job.id));
  GPUQ_FLEET_TRY(detail::bump_signal(store));
  return SubmitResult{std::move(job), false, repaired};
}

Result<JobView> show(ObjectStore& store, std::string_view ref) {
  auto id = resolve_job(store, ref);
  if (!id) return tl::unexpected(id.error());
  auto job = read_job(store, *id);
  if (!job) return tl::unexpected(job.error());
  auto claim = read_claim(store, *id);
  if (!claim) return tl::unexpected(claim.error());
  auto cancel = detail::cancel_requested(store, *id);
  if (!cancel) return tl::unexpected(cancel.error());
  JobView view{std::move(*job), std::nullopt, "", *cancel, {}};
  if (*claim) view.claim = (*claim)->claim;
  view.state = job_state(view.claim);
  if (!view.job.spec.outputs.empty()) {
    auto record = store.get(keys::outputs(*id));
    if (!record && record.error().code != Code::kNotFound) return tl::unexpected(record.error());
    if (record) {
      auto json = parse_object(keys::outputs(*id), record->body);
      auto outputs = json ? outputs_from_json(*json) : tl::unexpected(json.error());
      if (!outputs) return tl::unexpected(outputs.error());
      view.outputs = std::move(*outputs);
    }
  }
  return view;
}

Result<CancelOutcome> cancel(ObjectStore& store, std::string_view id, int64_t now_ms) {
  auto job = read_job(store, id);
  if (!job) return tl::unexpected(job.error());
  auto claim = read_claim(store, id);
  if (!claim) return tl::unexpected(claim.error());
  if (*claim && is_final_state((*claim)->claim.state)) {
    return fail(Code::kFailedPrecondition,
                fmt::format("fleet job {} has already ended: {}", id, (*claim)->claim.state));
  }
  auto marker = store.put(keys::cancel(id), nlohmann::json{{"requested_ms", now_ms}}.dump());
  if (!marker) return tl::unexpected(marker.error());
  CancelOutcome outcome = CancelOutcome::kRequested;
  if (!*claim) {
    auto ended = detail::end_unclaimed(store, *job, "cancelled before any node claimed it", now_ms);
    if (!ended) return tl::unexpected(ended.error());
    if (*ended) outcome = CancelOutcome::kCancelled;
  }
  GPUQ_FLEET_TRY(detail::bump_signal(store));
  return outcome;
}

Result<LogRead> read_log(ObjectStore& store, std::string_view id, int attempt,
                         const std::string& if_none_match) {
  if (attempt < 0) return fail(Code::kInvalidArgument, "an attempt is 1 or more (0: the latest)");
  if (attempt == 0) {
    auto claim = read_claim(store, id);
    if (!claim) return tl::unexpected(claim.error());
    if (!*claim) {
      return fail(Code::kFailedPrecondition,
                  fmt::format("fleet job {} has no log yet: no node has claimed it", id));
    }
    if ((*claim)->claim.attempt == 0) {
      return fail(Code::kFailedPrecondition,
                  fmt::format("fleet job {} never ran: {}", id, (*claim)->claim.state));
    }
    attempt = (*claim)->claim.attempt;
  }
  LogRead read{keys::log(id, attempt), attempt, {}};
  auto object = store.get(read.key, if_none_match);
  if (!object) {
    if (!is_code(object.error(), Code::kNotFound)) return tl::unexpected(object.error());
    return fail(Code::kNotFound,
                fmt::format("fleet job {} has no log for attempt {} yet", id, attempt));
  }
  read.object = std::move(*object);
  return read;
}

}  // namespace gpuq::fleet
