// The jobs a node holds: handing a claimed job to the daemon, renewing its lease, losing it,
// publishing its end, and keeping the held claims across a daemon restart.
#include <fmt/format.h>

#include "fleet/agent.h"
#include "os/process.h"

namespace gpuq::fleet {

namespace {

// The fleet state of a local job's end; "" while it has not ended.
std::string final_state(JobState state) {
  switch (state) {
    case JobState::kSucceeded:
    case JobState::kSkipped: return std::string(kSucceeded);
    case JobState::kFailed: return std::string(kFailed);
    case JobState::kCancelled: return std::string(kCancelled);
    default: return "";
  }
}

}  // namespace

bool Agent::lease_fresh(const Held& held, int64_t mono) const {
  return mono - held.renewed_mono < options_.lease_ms / 3;
}

bool Agent::take(FleetJob job, Claim claim, const std::string& etag, const std::string& entry_key,
                 int64_t mono, int64_t wall, const std::string& reclaimed_from) {
  Held held;
  held.job = std::move(job);
  held.entry_key = entry_key;
  held.claim = std::move(claim);
  held.etag = etag;
  held.renewed_mono = mono;
  held.next_renew_mono = mono + options_.lease_ms / 6;
  held.next_sync_mono = mono + options_.sync_every_ms;
  const FleetJob& fj = held.job;
  auto refuse = [&](const std::string& why) {
    held.claim.state = std::string(kFailed);
    held.claim.reason = why;
    executor_.event("job.claimed", std::nullopt,
                    {{"fleet_id", fj.id}, {"attempt", held.claim.attempt}, {"name", fj.name},
                     {"failed", why}});
    publish_end(held, wall);
    return false;
  };
  bool declares_data = !fj.spec.inputs.empty() || !fj.spec.outputs.empty();
  if (declares_data && data_ == nullptr) {
    return refuse(fmt::format("it declares data (gpuq-in/gpuq-out) but node {} cannot reach a data store: {}",
                              options_.node, options_.data_problem));
  }
  if (auto pulled = pull_inputs(fj); !pulled) return refuse(pulled.error().message);
  JobSpec spec = fj.spec;
  spec.name.clear();  // names belong to the fleet; the local job is known by its fleet id
  spec.cwd = options_.workdir;
  spec.fleet_id = fj.id;
  spec.env["GPUQ_FLEET_ID"] = fj.id;
  spec.env["GPUQ_FLEET_NODE"] = options_.node;
  spec.env["GPUQ_FLEET_ATTEMPT"] = std::to_string(held.claim.attempt);
  auto local = executor_.submit(std::move(spec));
  if (!local) return refuse(fmt::format("node {} refused it: {}", options_.node, local.error().message));
  held.claim.local_id = *local;
  std::string id = fj.id;
  Held& stored = held_[id] = std::move(held);
  save_state();
  nlohmann::json data = {{"fleet_id", id}, {"attempt", stored.claim.attempt}, {"name", stored.job.name}};
  if (!reclaimed_from.empty()) data["from"] = reclaimed_from;
  event(reclaimed_from.empty() ? "job.claimed" : "job.reclaimed", &stored, std::move(data));
  renew(stored, mono, wall);  // records the local id in the bucket
  return true;
}

bool Agent::renew(Held& held, int64_t mono, int64_t wall) {
  Claim next = held.claim;
  next.renewal += 1;
  next.updated_ms = wall;
  const int64_t sent = now(mono);
  auto replaced = store_.replace(keys::claim(held.job.id), to_json(next).dump(), held.etag);
  if (replaced) {
    held.claim = next;
    held.etag = *replaced;
    held.renewed_mono = sent;
    held.next_renew_mono = sent + options_.lease_ms / 6;
    return true;
  }
  if (replaced.error().code == Code::kConflict || replaced.error().code == Code::kNotFound) {
    lose(held, "its claim was changed by someone else (taken over after its lease expired)");
    return false;
  }
  // Transient: try again soon; only lease/3 without a renewal stops the run.
  held.next_renew_mono = mono + std::max<int64_t>(options_.lease_ms / 30, 1);
  return false;
}

void Agent::keep_leases(int64_t wall) {
  if (!clock_) return;
  const int64_t now = clock_();
  for (auto& [id, held] : held_) {
    // A lease already gone is tend_held's to handle.
    if (held.lost || held.done || now < held.next_renew_mono || !lease_fresh(held, now)) continue;
    renew(held, now, wall);
  }
}

void Agent::lose(Held& held, const std::string& why) {
  if (held.lost) return;
  held.lost = true;
  if (held.claim.local_id > 0) (void)executor_.cancel(held.claim.local_id);
  event("job.claim_lost", &held, {{"fleet_id", held.job.id}, {"attempt", held.claim.attempt}, {"why", why}});
  // Watched from now on as another node's claim would be: when no one took it over (this node
  // may be the only one that serves its queue, and a scan never watches a claim in its own
  // name), it is taken again once it has stood unchanged for a lease since our last renewal.
  if (!held.entry_key.empty()) {
    QueueEntry entry;
    entry.key = held.entry_key;
    entry.id = held.job.id;
    watched_[held.job.id] = Watched{held.etag, held.renewed_mono, held.renewed_mono, held.claim, entry};
  }
}

void Agent::tend_held(int64_t mono, int64_t wall) {
  for (auto& [id, held] : held_) {
    keep_leases(wall);  // the others', while this one's log and outputs are pushed
    if (held.lost || held.done) continue;
    if (!lease_fresh(held, mono)) {
      lose(held, fmt::format("no renewal of its claim for {} s (a third of the lease): the bucket cannot "
                             "be reached",
                             options_.lease_ms / 3000));
      continue;
    }
    auto local = executor_.job(held.claim.local_id);
    if (!local) {
      if (local.error().code != Code::kNotFound) continue;
      LocalJob gone;
      gone.state = JobState::kFailed;
      gone.reason = fmt::format("its local job {} is gone from node {}", held.claim.local_id, options_.node);
      finish(held, gone, mono, wall);
      continue;
    }
    if (is_terminal(local->state)) {
      finish(held, *local, mono, wall);
      continue;
    }
    if (mono >= held.next_renew_mono && !renew(held, mono, wall)) continue;
    if (mono >= held.next_sync_mono && lease_fresh(held, mono)) {
      push_log(held, *local);
      push_outputs(held);
      held.next_sync_mono = mono + options_.sync_every_ms;
    }
  }
  size_t before = held_.size();
  std::erase_if(held_, [](const auto& item) { return item.second.lost || item.second.done; });
  if (held_.size() != before) save_state();
}

bool Agent::finish(Held& held, const LocalJob& local, int64_t mono, int64_t wall) {
  // A renewal first: the claim is still ours for a whole lease, so what follows is published
  // by the holder and by no one else.
  if (!renew(held, mono, wall)) return false;
  push_log(held, local);
  std::string missing = push_outputs(held);
  held.claim.state = final_state(local.state);
  held.claim.exit_code = local.exit_code;
  held.claim.runs = local.runs;
  held.claim.reason = local.reason;
  if (!missing.empty()) held.claim.reason += (held.claim.reason.empty() ? "" : "; ") + missing;
  return publish_end(held, wall);
}

bool Agent::publish_end(Held& held, int64_t wall) {
  held.claim.updated_ms = wall;
  auto replaced = store_.replace(keys::claim(held.job.id), to_json(held.claim).dump(), held.etag);
  if (!replaced) {
    if (replaced.error().code == Code::kConflict || replaced.error().code == Code::kNotFound) {
      lose(held, "its claim was taken over before its end could be published");
    }
    return false;
  }
  held.etag = *replaced;
  held.done = true;
  (void)store_.put(ended_key(wall, held.job.id), nlohmann::json{{"id", held.job.id}}.dump());
  (void)store_.remove(held.entry_key);
  bump_signal();
  return true;
}

void Agent::check_cancels() {
  for (auto& [id, held] : held_) {
    if (held.cancel_requested || held.lost || held.done) continue;
    auto cancel = store_.get(keys::cancel(id));
    if (!cancel) continue;
    held.cancel_requested = true;
    (void)executor_.cancel(held.claim.local_id);
  }
}

void Agent::save_state() const {
  if (options_.state_file.empty()) return;
  nlohmann::json claims = nlohmann::json::array();
  for (const auto& [id, held] : held_) {
    if (held.lost || held.done) continue;
    claims.push_back({{"id", id},
                      {"attempt", held.claim.attempt},
                      {"token", held.claim.token},
                      {"local_id", held.claim.local_id},
                      {"entry", held.entry_key}});
  }
  nlohmann::json doc = {{"node", options_.node}, {"claims", claims}};
  if (auto written = os::write_file_atomic(options_.state_file, doc.dump(2) + "\n"); !written) {
    executor_.event("fleet.state_unsaved", std::nullopt, {{"file", options_.state_file}, {"error", written.error().message}});
  }
}

Status Agent::load_state(int64_t mono, int64_t wall) {
  if (options_.state_file.empty()) return ok();
  auto text = os::read_file(options_.state_file);
  if (!text) return ok();  // none yet
  auto doc = parse_object(options_.state_file, *text);
  if (!doc || !doc->is_object() || !(*doc)["claims"].is_array()) {
    return fail(Code::kCorruption, fmt::format("{}: not the fleet agent's state; move it away to start afresh "
                                               "(its claims then expire and other nodes rerun their jobs)",
                                               options_.state_file));
  }
  for (const auto& item : (*doc)["claims"]) {
    std::string id = item.value("id", "");
    auto object = store_.get(keys::claim(id));
    auto parsed = object ? parse_object(keys::claim(id), object->body) : Result<nlohmann::json>(tl::unexpected(object.error()));
    auto claim = parsed ? claim_from_json(*parsed) : Result<Claim>(tl::unexpected(parsed.error()));
    auto job = load_job(id);
    Held held;
    held.claim.local_id = item.value("local_id", int64_t{0});
    held.claim.attempt = item.value("attempt", 0);
    if (job) held.job = *job;
    held.job.id = id;
    bool ours = claim && job && claim->node == options_.node && claim->token == item.value("token", "") &&
                claim->attempt == held.claim.attempt && claim->state == kRunning;
    if (!ours) {
      if (object || object.error().code == Code::kNotFound) {
        lose(held, "its claim changed while the daemon was down");
      } else {
        lose(held, fmt::format("its claim could not be read at start: {}", object.error().message));
      }
      continue;
    }
    held.claim = *claim;
    held.etag = object->etag;
    held.entry_key = item.value("entry", held.job.entry());
    held.renewed_mono = mono;
    held.next_sync_mono = mono;
    held_[id] = std::move(held);
    if (renew(held_[id], mono, wall)) {
      event("job.claimed", &held_[id], {{"fleet_id", id}, {"attempt", held_[id].claim.attempt}, {"adopted", true}});
    }
  }
  std::erase_if(held_, [](const auto& item) { return item.second.lost; });
  save_state();
  return ok();
}

}  // namespace gpuq::fleet
