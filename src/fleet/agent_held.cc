// SPDX-License-Identifier: Apache-2.0
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
  std::string id = job.id;
  Held& held = held_[id];
  held = Held{};
  held.job = std::move(job);
  held.entry_key = entry_key;
  held.claim = std::move(claim);
  held.etag = etag;
  held.renewed_mono = mono;
  held.next_renew_mono = mono + options_.lease_ms / 6;
  held.next_sync_mono = mono + options_.sync_every_ms;
  held.reclaimed_from = reclaimed_from;
  return start_local(held, wall);
}

bool Agent::start_local(Held& held, int64_t wall) {
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
  // A failure that may pass (the store, the daemon stopping) keeps the claim and tries again
  // at the next tending; only what cannot change ends the job.
  auto later = [&] {
    held.next_start_mono = now() + options_.poll_ms;
    return false;
  };
  bool declares_data = !fj.spec.inputs.empty() || !fj.spec.outputs.empty();
  if (declares_data && data_ == nullptr) {
    return refuse(fmt::format("it declares data (gpuq-in/gpuq-out) but node {} cannot reach a data store: {}",
                              options_.node, options_.data_problem));
  }
  // Inputs (and a resumed attempt's earlier outputs) move on the transfer queue; the claim is
  // renewed meanwhile by tend_held, which looks here again when the pull is done.
  if (declares_data) {
    if (auto begun = begin_pull(held); !begun) return later();
    if (!held.pull->done.load(std::memory_order_acquire)) {
      held.next_start_mono = now();
      return false;
    }
    Status pulled = held.pull->status;
    held.pull.reset();
    if (pulled) note_pulled_outputs(held);
    if (!pulled) {
      if (pulled.error().code == Code::kUnavailable || pulled.error().code == Code::kConflict) return later();
      return refuse(pulled.error().message);
    }
  }
  if (auto gpu = pinned_gpu(fj.spec)) {
    // Pinned to one GPU (once the inputs are there, so asked once): the daemon keeps the spec's reservation as that GPU alone.
    if (auto reserved = executor_.reserve_gpu(fj.spec.reservation, *gpu); !reserved) {
      if (reserved.error().code == Code::kUnavailable) return later();
      return refuse(fmt::format("it is pinned to gpu{} of node {}: {}", *gpu, options_.node,
                                reserved.error().message));
    }
  }
  JobSpec spec = fj.spec;
  for (const auto& [name, value] : options_.base_env) spec.env.emplace(name, value);
  spec.name.clear();  // names belong to the fleet; the local job is known by its fleet id
  spec.cwd = options_.workdir;
  spec.fleet_id = fj.id;
  // The local job's user is the fleet submitter's ("user@host"); the daemon's own when the
  // spec does not say (docs/fleet.md).
  std::string submitter = fj.submitted_by.substr(0, fj.submitted_by.find('@'));
  spec.user = submitter == "?" ? "" : submitter;
  spec.env["GPUQ_FLEET_ID"] = fj.id;
  spec.env["GPUQ_FLEET_NODE"] = options_.node;
  spec.env["GPUQ_FLEET_ATTEMPT"] = std::to_string(held.claim.attempt);
  spec.env["GPUQ_ATTEMPT"] = std::to_string(held.claim.attempt);
  // A reclaimed attempt that resumes: the outputs its earlier attempts pushed are in place, and
  // the first run sees GPUQ_RESUME=1 (a run variable: the runner sets it).
  spec.fleet_resume = held.resuming;
  // The run stops by itself when the claim is not renewed in time (ClaimDeadlineFiles).
  if (!deadlines_.renewed(fj.id, held.claim.attempt, held.renewed_mono)) return later();
  spec.claim_deadline_file = deadlines_.path(fj.id, held.claim.attempt);
  auto local = executor_.submit(std::move(spec));
  if (!local) {
    if (local.error().code == Code::kUnavailable) return later();
    return refuse(fmt::format("node {} refused it: {}", options_.node, local.error().message));
  }
  held.claim.local_id = *local;
  held.started = true;
  save_state();
  nlohmann::json data = {{"fleet_id", fj.id}, {"attempt", held.claim.attempt}, {"name", fj.name}};
  if (!held.reclaimed_from.empty()) data["from"] = held.reclaimed_from;
  event(held.reclaimed_from.empty() ? "job.claimed" : "job.reclaimed", &held, std::move(data));
  renew(held, now(), wall);  // records the local id in the bucket
  return true;
}

void Agent::keep_leases(int64_t wall) {
  if (!options_.mono_clock) return;  // time stands still within a step
  for (auto& [id, held] : held_) {
    int64_t at = now();
    // A lease already gone is tend_held's to handle.
    if (held.lost || held.done || at < held.next_renew_mono || !lease_fresh(held, at)) continue;
    renew(held, at, wall);
  }
}

bool Agent::renew(Held& held, int64_t mono, int64_t wall) {
  // The lease counts from the moment the request left, whatever the step's clock said.
  mono = std::max(mono, now());
  Claim next = held.claim;
  next.renewal += 1;
  next.updated_ms = wall;
  auto replaced = store_.replace(keys::claim(held.job.id), to_json(next).dump(), held.etag);
  if (replaced) {
    held.claim = next;
    held.etag = *replaced;
    held.renewed_mono = mono;
    held.next_renew_mono = mono + options_.lease_ms / 6;
    (void)deadlines_.renewed(held.job.id, held.claim.attempt, mono);  // unwritten: the run stops sooner
    return true;
  }
  if (replaced.error().code == Code::kConflict) {
    // A renewal of ours whose answer was lost may have landed after all (the store settles
    // such a write by reading it back, but that read can fail too): a claim that still holds
    // this node, our token and our attempt is ours, at the ETag it has now.
    auto current = store_.get(keys::claim(held.job.id));
    auto doc = current ? parse_object(keys::claim(held.job.id), current->body) : Result<nlohmann::json>(tl::unexpected(current.error()));
    auto claim = doc ? claim_from_json(*doc) : Result<Claim>(tl::unexpected(doc.error()));
    if (claim && claim->node == options_.node && claim->token == held.claim.token &&
        claim->attempt == held.claim.attempt && claim->state == kRunning && held.etag != current->etag) {
      held.claim = *claim;
      held.etag = current->etag;
      return renew(held, mono, wall);
    }
    if (!current && current.error().code != Code::kNotFound) {
      held.next_renew_mono = mono + std::max<int64_t>(options_.lease_ms / 30, 1);  // cannot tell yet
      return false;
    }
  }
  if (replaced.error().code == Code::kConflict || replaced.error().code == Code::kNotFound) {
    lose(held, "its claim was changed by someone else (taken over after its lease expired)");
    return false;
  }
  // Transient: try again soon; only lease/3 without a renewal stops the run.
  held.next_renew_mono = mono + std::max<int64_t>(options_.lease_ms / 30, 1);
  return false;
}

void Agent::lose(Held& held, const std::string& why) {
  if (held.lost) return;
  held.lost = true;
  if (held.claim.local_id > 0) (void)executor_.cancel(held.claim.local_id);
  // Transfers in flight stop between files: what they move is no longer ours to publish.
  if (held.pull) held.pull->cancelled = true;
  if (held.push) held.push->cancelled = true;
  deadlines_.forget(held.job.id, held.claim.attempt);
  event("job.claim_lost", &held, {{"fleet_id", held.job.id}, {"attempt", held.claim.attempt}, {"why", why}});
  // Watched from now on as another node's claim would be: when no one took it over (this node
  // may be the only one that serves its queue, and no scan may come: the signal changes only
  // when a queue does), it is taken again once it has stood unchanged for a lease since our
  // last renewal.
  if (!held.entry_key.empty() && !held.etag.empty()) {
    QueueEntry entry;
    entry.key = held.entry_key;
    entry.id = held.job.id;
    watched_[held.job.id] = Watched{held.etag, held.renewed_mono, held.renewed_mono, held.claim, entry};
  }
}

void Agent::tend_held(int64_t mono, int64_t wall) {
  retry_adoptions(mono, wall);
  for (auto& [id, held] : held_) {
    keep_leases(wall);  // the others', while this one's log and outputs are pushed
    if (held.lost || held.done) continue;
    std::string stale = fmt::format("no renewal of its claim for {} s (a third of the lease): the bucket "
                                    "cannot be reached",
                                    options_.lease_ms / 3000);
    if (!held.started) {
      if (held.cancel_requested) {
        held.claim.state = std::string(kCancelled);
        held.claim.reason = "cancelled before it started";
        publish_end(held, wall);
      } else if (!lease_fresh(held, mono)) {
        lose(held, stale);
      } else {
        // While its inputs are pulled, the claim is kept as a running job's is.
        if (mono >= held.next_renew_mono && !renew(held, mono, wall)) continue;
        if (mono >= held.next_start_mono) start_local(held, wall);
      }
      continue;
    }
    auto local = executor_.job(held.claim.local_id);
    if (!local && local.error().code == Code::kNotFound) {
      LocalJob gone;
      gone.state = JobState::kFailed;
      gone.reason = fmt::format("its local job {} is gone from node {}", held.claim.local_id, options_.node);
      finish(held, gone, mono, wall);
      continue;
    }
    if (local && local->claim_lapsed) {  // its run stopped itself: the claim is not ours to end
      lose(held, local->reason);
      continue;
    }
    // A run that has ended is published even after a long outage: the outcome is written with
    // If-Match on the claim, so it lands only if no one took the job over meanwhile.
    if (local && is_terminal(local->state)) {
      finish(held, *local, mono, wall);
      continue;
    }
    if (!lease_fresh(held, mono)) {
      lose(held, stale);
      continue;
    }
    if (mono >= held.next_renew_mono && !renew(held, mono, wall)) continue;
    take_push(held);
    if (local && mono >= held.next_sync_mono && lease_fresh(held, mono)) {
      (void)push_log(held, *local);  // one that fails is tried again at the next sync
      begin_push(held, false);
      take_push(held);  // done already when transfers are inline
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
  // Renewed again while its outputs are pushed (they may take longer than a lease), at the
  // lease's pace: not at every tend while a push begun during the run is still in flight.
  // Nothing is pushed until one renewal at the end has succeeded (a failed one is tried again
  // at the next tend): the outputs' keys are every attempt's, and a claim taken over meanwhile
  // must not have its holder's outputs overwritten.
  if (!held.end_renewed || mono >= held.next_renew_mono) {
    if (!renew(held, mono, wall)) return false;
    held.end_renewed = true;
  }
  // Its log's last part and its outputs before the end (a reader of the end reads the whole
  // log and finds every output), side by side: a log tried again does not hold outputs back.
  const bool log_done = push_log_at_end(held, local, mono);
  const bool outputs_done = push_at_end(held);
  if (!log_done || !outputs_done) return false;
  held.claim.state = final_state(local.state);
  held.claim.exit_code = local.exit_code;
  held.claim.runs = local.runs;
  held.claim.reason = local.reason;
  for (const std::string& note : {held.end_note, held.end_log_note, outputs_not_pushed(held)}) {
    if (!note.empty()) held.claim.reason += (held.claim.reason.empty() ? "" : "; ") + note;
  }
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
  deadlines_.forget(held.job.id, held.claim.attempt);
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
    if (!held.started) {
      held.cancel_requested = true;  // never started: its end is published as cancelled below
      continue;
    }
    held.cancel_requested = executor_.cancel(held.claim.local_id).has_value();
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
  for (const auto& item : pending_adoptions_) claims.push_back(item);
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
    if (!item.is_object() || !item.value("id", nlohmann::json()).is_string()) continue;
    pending_adoptions_.push_back(item);
  }
  retry_adoptions(mono, wall);
  return ok();
}

void Agent::retry_adoptions(int64_t mono, int64_t wall) {
  if (pending_adoptions_.empty()) return;
  std::vector<nlohmann::json> still;
  for (const auto& item : pending_adoptions_) {
    if (!adopt(item, mono, wall)) still.push_back(item);
  }
  pending_adoptions_ = std::move(still);
  save_state();
}

bool Agent::adopt(const nlohmann::json& item, int64_t mono, int64_t wall) {
  std::string id = item.value("id", "");
  auto object = store_.get(keys::claim(id));
  if (!object && object.error().code != Code::kNotFound) return false;  // ask again later
  auto job = load_job(id);
  if (!job && job.error().code != Code::kNotFound && job.error().code != Code::kCorruption) return false;
  auto parsed = object ? parse_object(keys::claim(id), object->body) : Result<nlohmann::json>(tl::unexpected(object.error()));
  auto claim = parsed ? claim_from_json(*parsed) : Result<Claim>(tl::unexpected(parsed.error()));
  Held held;
  held.claim.local_id = item.value("local_id", int64_t{0});
  held.claim.attempt = item.value("attempt", 0);
  if (job) held.job = *job;
  held.job.id = id;
  bool ours = claim && job && claim->node == options_.node && claim->token == item.value("token", "") &&
              claim->attempt == held.claim.attempt && claim->state == kRunning;
  if (!ours) {
    lose(held, "its claim changed while the daemon was down");
    return true;
  }
  held.claim = *claim;
  held.etag = object->etag;
  held.entry_key = item.value("entry", held.job.entry());
  held.started = held.claim.local_id > 0;
  held.renewed_mono = mono;
  held.next_sync_mono = mono;
  // Outputs this attempt pushed before the restart are not pushed again while unchanged.
  if (auto record = read_output_record(id); record) {
    for (const OutputRecord& o : *record) {
      LocalOutput& local = held.outputs[o.path];
      local.record = o;
      if (o.node == options_.node && o.attempt == held.claim.attempt && o.state == kOutputPushed) {
        local.pushed_size = o.size;
        local.pushed_mtime_ns = o.mtime_ns;
      }
    }
  }
  Held& stored = held_[id] = std::move(held);
  if (renew(stored, mono, wall)) {
    event("job.claimed", &stored, {{"fleet_id", id}, {"attempt", stored.claim.attempt}, {"adopted", true}});
  }
  return true;
}

}  // namespace gpuq::fleet
