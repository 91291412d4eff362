// SPDX-License-Identifier: Apache-2.0
#include "fleet/agent.h"

#include <algorithm>
#include <fmt/format.h>

namespace gpuq::fleet {

namespace {

// How many polls in a row that saw no change before the poll slows to 1.25× (a minute at 2 s).
constexpr int64_t kQuietPolls = 30;

}  // namespace

Agent::Agent(ObjectStore& store, ObjectStore* data, Executor& executor, AgentOptions options,
             TransferQueue* transfers)
    : store_(store),
      data_(data),
      executor_(executor),
      options_(std::move(options)),
      deadlines_(options_.claim_deadline_dir, options_.lease_ms) {
  if (transfers == nullptr && data_ != nullptr) {
    inline_transfers_ = std::make_unique<InlineTransferQueue>(*data_);
    transfers = inline_transfers_.get();
  }
  transfers_ = transfers;
}

int64_t Agent::now() const {
  return options_.mono_clock ? std::max(step_mono_, options_.mono_clock()) : step_mono_;
}

std::vector<std::string> Agent::held() const {
  std::vector<std::string> ids;
  for (const auto& [id, held] : held_) ids.push_back(id);
  return ids;
}

Status Agent::start(int64_t mono_ms, int64_t wall_ms) {
  step_mono_ = mono_ms;
  if (auto loaded = load_state(mono_ms, wall_ms); !loaded) return loaded;
  heartbeat(wall_ms);
  next_beat_mono_ = mono_ms + options_.heartbeat_ms;
  next_poll_mono_ = mono_ms;
  next_tend_mono_ = mono_ms;
  next_watch_mono_ = mono_ms + options_.lease_ms / 3;
  next_node_watch_mono_ = mono_ms;
  return ok();
}

int64_t Agent::step(int64_t mono, int64_t wall) {
  step_mono_ = mono;
  if (mono >= next_beat_mono_) {
    heartbeat(wall);
    next_beat_mono_ = mono + options_.heartbeat_ms;
  }
  if (nudged_ || mono >= next_tend_mono_) {
    nudged_ = false;
    tend_held(mono, wall);
    next_tend_mono_ = mono + std::min(options_.poll_ms, options_.lease_ms / 6);
  }
  if (mono >= next_poll_mono_) {
    poll_signal(mono);
    int spare = spare_at_scan_;
    if (!signal_changed_ && work_left_) {
      auto machine = executor_.machine();
      if (machine) spare = spare_gpus(*machine);
    }
    // A change in the bucket, or room that appeared while jobs were left behind.
    if (signal_changed_ || (work_left_ && spare > spare_at_scan_)) scan(mono, wall);
    bool quiet = quiet_polls_ >= kQuietPolls;
    next_poll_mono_ = mono + (quiet ? options_.poll_ms + options_.poll_ms / 4 : options_.poll_ms);
  }
  if (mono >= next_watch_mono_) {
    // Other nodes' claims, each looked at every lease/3 with a conditional GET.
    for (auto it = watched_.begin(); it != watched_.end();) {
      auto& [id, watched] = *it;
      ++it;
      if (mono < watched.next_look_mono) continue;
      keep_leases(wall);  // many watched claims take many requests
      watched.next_look_mono = mono + options_.lease_ms / 3;
      std::string watched_id = id;  // expire() may erase the watch
      auto object = store_.get(keys::claim(watched_id), watched.etag);
      if (!object) {
        if (object.error().code == Code::kNotFound) watched_.erase(watched_id);
        continue;
      }
      if (object->not_modified) {
        if (mono - watched.since_mono >= lease_of(watched.claim)) expire(watched_id, mono, wall);
        continue;
      }
      auto doc = parse_object(keys::claim(id), object->body);
      auto claim = doc ? claim_from_json(*doc) : Result<Claim>(tl::unexpected(doc.error()));
      if (!claim || claim->state != kRunning) {
        watched_.erase(id);
        continue;
      }
      watched.etag = object->etag;
      watched.since_mono = now();  // seen now, however long this step took
      watched.claim = *claim;
    }
    next_watch_mono_ = mono + std::max<int64_t>(options_.lease_ms / 12, 1);
  }
  if (mono >= next_node_watch_mono_) {
    watch_nodes(mono);
    next_node_watch_mono_ = mono + options_.node_watch_ms;
  }
  return std::min({next_beat_mono_, next_tend_mono_, next_poll_mono_, next_watch_mono_, next_node_watch_mono_});
}

void Agent::poll_signal(int64_t) {
  auto object = store_.get(std::string(keys::kSignal), signal_etag_);
  if (!object) {
    reachable_ = object.error().code == Code::kNotFound;
    // No signal yet: an empty fleet. Nothing to take until a submit writes one.
    if (object.error().code == Code::kNotFound && signal_etag_.empty()) ++quiet_polls_;
    return;
  }
  reachable_ = true;
  if (object->not_modified) {
    ++quiet_polls_;
    return;
  }
  signal_etag_ = object->etag;
  signal_changed_ = true;
  quiet_polls_ = 0;
}

std::vector<std::string> Agent::queues() const {
  std::vector<std::string> prefixes = {keys::node_queue(options_.node), keys::class_queue("any")};
  for (const auto& klass : options_.classes) {
    if (klass != "any") prefixes.push_back(keys::class_queue(klass));
  }
  return prefixes;
}

int Agent::spare_gpus(const LocalMachine& machine) const {
  // A job whose inputs are still being pulled is not the daemon's yet, but its GPUs are taken.
  int spare = machine.spare_gpus;
  for (const auto& [id, held] : held_) {
    if (!held.started && !held.lost && !held.done) spare -= held.job.spec.gpus;
  }
  return std::max(spare, 0);
}

void Agent::scan(int64_t mono, int64_t wall) {
  auto machine = executor_.machine();
  if (!machine) return;
  auto drain = store_.get(keys::drain(options_.node));
  if (!drain && drain.error().code != Code::kNotFound) return;  // try again at the next poll
  draining_ = drain.has_value() || !machine->accepting;
  check_disk(*machine);
  signal_changed_ = false;  // what follows may ask for another scan (a lost race, a failure)
  check_cancels();
  int spare = spare_gpus(*machine);
  spare_at_scan_ = spare;
  work_left_ = false;
  bool zero_gpu_waiting = false;
  for (const auto& [id, held] : held_) {
    auto local = executor_.job(held.claim.local_id);
    if (local && !local->started && held.job.spec.gpus == 0) zero_gpu_waiting = true;
  }
  // Entries in order: this node's pinned queue first, then the class queues, each best first.
  std::vector<std::pair<QueueEntry, std::string>> entries;
  for (const auto& queue : queues()) {
    auto listing = store_.list(queue);
    if (!listing) {
      reachable_ = false;
      signal_changed_ = true;
      return;
    }
    for (const auto& info : listing->objects) {
      if (auto entry = parse_entry(queue, info.key)) entries.emplace_back(*entry, queue);
    }
  }
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    return a.first.priority != b.first.priority ? a.first.priority < b.first.priority
                                                : a.first.submitted_ms < b.first.submitted_ms;
  });
  for (const auto& [entry, queue] : entries) {
    if (held_.count(entry.id)) continue;
    keep_leases(wall);  // a long queue takes many requests
    try_job(entry, queue, mono, wall, spare, zero_gpu_waiting);
  }
}

Claim Agent::next_attempt(Claim claim, int64_t wall) const {
  claim.node = options_.node;
  claim.attempt += 1;
  claim.token = random_token();
  claim.renewal = 0;
  claim.local_id = 0;
  claim.runs = 0;
  claim.updated_ms = wall;
  claim.lease_ms = options_.lease_ms;
  return claim;
}

int64_t Agent::lease_of(const Claim& claim) const {
  return claim.lease_ms > 0 ? claim.lease_ms : options_.lease_ms;
}

void Agent::watch(const QueueEntry& entry, const Claim& claim, const std::string& etag) {
  auto& watched = watched_[entry.id];
  if (watched.etag == etag) return;
  int64_t seen = now();  // seen now, however long this step took
  watched = Watched{etag, seen, seen + lease_of(claim) / 3, claim, entry};
}

void Agent::retake(const QueueEntry& entry, Claim claim, const std::string& etag, int64_t mono, int64_t wall) {
  for (const auto& item : pending_adoptions_) {
    if (item.value("id", "") == entry.id) return;  // perhaps still ours: the adoption decides
  }
  auto job = load_job(entry.id);
  auto machine = executor_.machine();
  if (!job || !machine || job->spec.gpus > spare_gpus(*machine)) return;
  claim = next_attempt(std::move(claim), wall);
  auto replaced = store_.replace(keys::claim(entry.id), to_json(claim).dump(), etag);
  if (!replaced) return;
  take(*job, claim, *replaced, entry.key, mono, wall, options_.node);
}

Result<FleetJob> Agent::load_job(const std::string& id) {
  auto cached = specs_.find(id);
  if (cached != specs_.end()) return cached->second;
  auto object = store_.get(keys::spec(id));
  if (!object) return tl::unexpected(object.error());
  auto doc = parse_object(keys::spec(id), object->body);
  if (!doc) return tl::unexpected(doc.error());
  auto job = fleet_job_from_json(*doc);
  if (!job) return fail(job.error().code, fmt::format("{}: {}", keys::spec(id), job.error().message));
  if (specs_.size() > 10'000) specs_.clear();
  specs_[id] = *job;
  return job;
}

bool Agent::try_job(const QueueEntry& entry, const std::string& queue, int64_t mono, int64_t wall,
                    int& spare, bool& zero_gpu_waiting) {
  auto object = store_.get(keys::claim(entry.id));
  if (object) {
    auto doc = parse_object(keys::claim(entry.id), object->body);
    auto claim = doc ? claim_from_json(*doc) : Result<Claim>(tl::unexpected(doc.error()));
    if (!claim) return false;
    if (is_final_state(claim->state)) {
      (void)store_.remove(entry.key);  // its holder died between its end and this cleanup
      return false;
    }
    if (claim->node == options_.node) {
      // A claim of this node that it no longer holds (lost in an outage, or its start failed
      // half way): no one else would ever take it, so take it again, fenced by its ETag.
      if (takes_jobs()) retake(entry, *claim, object->etag, mono, wall);
      return false;
    }
    bool class_job = queue.rfind(keys::kClassQueues, 0) == 0;
    bool pinned_here = queue == keys::node_queue(options_.node);
    if (class_job || pinned_here) watch(entry, *claim, object->etag);
    return false;
  }
  if (object.error().code != Code::kNotFound) {
    signal_changed_ = true;  // the store failed: look again at the next poll
    return false;
  }
  if (!takes_jobs()) {
    work_left_ = true;
    return false;
  }
  auto job = load_job(entry.id);
  if (!job) return false;
  if (job->spec.gpus > spare || (job->spec.gpus == 0 && zero_gpu_waiting)) {
    work_left_ = true;
    return false;
  }
  auto cancel = store_.get(keys::cancel(entry.id));
  if (cancel) {
    end_unclaimed(*job, entry.key, std::string(kCancelled), "cancelled before it started", wall);
    return false;
  }
  std::string never;
  if (!dependencies_met(*job, never)) {
    if (!never.empty()) end_unclaimed(*job, entry.key, std::string(kCancelled), never, wall);
    return false;
  }
  Claim claim;
  claim.job = entry.id;
  claim.node = options_.node;
  claim.attempt = 1;
  claim.token = random_token();
  claim.updated_ms = wall;
  claim.lease_ms = options_.lease_ms;
  auto created = store_.create(keys::claim(entry.id), to_json(claim).dump());
  if (!created) {
    // Another node took it (412): watch its claim like any other. A failure: next poll.
    if (created.error().code == Code::kConflict) signal_changed_ = true;
    return false;
  }
  if (!take(*job, claim, *created, entry.key, mono, wall, "")) return false;
  spare -= job->spec.gpus;
  if (job->spec.gpus == 0) zero_gpu_waiting = true;
  return true;
}

void Agent::expire(std::string id, int64_t mono, int64_t wall) {
  auto found = watched_.find(id);
  if (found == watched_.end()) return;
  Watched watched = found->second;
  if (!takes_jobs()) return;
  auto job = load_job(id);
  auto machine = executor_.machine();
  if (!job || !machine) return;
  if (job->spec.gpus > spare_gpus(*machine) || !machine->accepting) return;  // one with room will
  Claim claim = watched.claim;
  std::string from = claim.node;
  auto cancel = store_.get(keys::cancel(id));
  claim = next_attempt(std::move(claim), wall);
  if (cancel) {
    claim.state = std::string(kCancelled);
    claim.reason = fmt::format("cancelled; its node {} stopped renewing its claim", from);
  }
  auto replaced = store_.replace(keys::claim(id), to_json(claim).dump(), watched.etag);
  if (!replaced) {
    // Renewed after all, or another node was faster: the next scan watches the claim as it is
    // now. A transient failure: the watch stays, and the next look tries again.
    if (replaced.error().code == Code::kConflict || replaced.error().code == Code::kNotFound) {
      watched_.erase(id);
      signal_changed_ = true;
    }
    return;
  }
  watched_.erase(id);
  if (cancel) {
    (void)store_.put(ended_key(wall, id), nlohmann::json{{"id", id}}.dump());
    (void)store_.remove(watched.entry.key);
    bump_signal();
    return;
  }
  take(*job, claim, *replaced, watched.entry.key, mono, wall, from);
}

bool Agent::dependencies_met(const FleetJob& job, std::string& never) {
  for (const auto& dep : job.after) {
    // A name first (as `gpuq fleet` resolves it), then an id.
    std::string id = dep.target;
    auto name = store_.get(keys::name(dep.target));
    if (name) {
      auto doc = parse_object(keys::name(dep.target), name->body);
      if (!doc || !doc->is_object() || !(*doc)["id"].is_string()) return false;
      id = (*doc)["id"].get<std::string>();
    } else if (name.error().code != Code::kNotFound || !looks_like_job_id(dep.target)) {
      return false;  // not submitted yet (or the store failed): wait
    }
    auto object = store_.get(keys::claim(id));
    if (!object) return false;
    auto doc = parse_object(keys::claim(id), object->body);
    auto claim = doc ? claim_from_json(*doc) : Result<Claim>(tl::unexpected(doc.error()));
    if (!claim || !is_final_state(claim->state)) return false;
    bool succeeded = claim->state == kSucceeded;
    bool met = dep.kind == Dependency::Kind::kAfterAny ||
               (dep.kind == Dependency::Kind::kAfterOk && succeeded) ||
               (dep.kind == Dependency::Kind::kAfterNotOk && !succeeded);
    if (!met) {
      never = fmt::format("its dependency {} {} {}, so it can never start", to_string(dep.kind),
                          dep.target, claim->state);
      return false;
    }
  }
  return true;
}

void Agent::end_unclaimed(const FleetJob& job, const std::string& entry_key, const std::string& state,
                          const std::string& why, int64_t wall) {
  Claim claim;
  claim.job = job.id;
  claim.token = random_token();
  claim.state = state;
  claim.reason = why;
  claim.updated_ms = wall;
  if (!store_.create(keys::claim(job.id), to_json(claim).dump())) return;
  (void)store_.put(ended_key(wall, job.id), nlohmann::json{{"id", job.id}}.dump());
  (void)store_.remove(entry_key);
  bump_signal();
}

void Agent::heartbeat(int64_t wall) {
  auto machine = executor_.machine();
  Heartbeat beat;
  beat.node = options_.node;
  beat.version = options_.version;
  beat.time_ms = wall;
  beat.interval_ms = options_.heartbeat_ms;
  beat.classes = {"any"};
  for (const auto& klass : options_.classes) {
    if (klass != "any") beat.classes.push_back(klass);
  }
  if (machine) {
    beat.gpus = machine->gpus;
    beat.free_gpus = static_cast<int>(std::count_if(beat.gpus.begin(), beat.gpus.end(),
                                                    [](const HeartbeatGpu& g) { return !g.busy; }));
    beat.workdir_free_bytes = machine->workdir_free_bytes;
    beat.shm_free_bytes = machine->shm_free_bytes;
    check_disk(*machine);
  }
  for (const auto& [id, held] : held_) beat.running.push_back(id);
  beat.draining = draining_;
  beat.min_free_disk_bytes = options_.min_free_disk_bytes;
  beat.not_taking = not_taking_;
  auto put = store_.put(keys::heartbeat(options_.node), to_json(beat).dump());
  reachable_ = put.has_value();
}

void Agent::check_disk(const LocalMachine& machine) {
  int64_t free = machine.workdir_free_bytes;
  bool low = free >= 0 && free < options_.min_free_disk_bytes;
  if (low == !not_taking_.empty()) return;
  nlohmann::json data = {{"node", options_.node}, {"workdir", options_.workdir}, {"free_bytes", free},
                         {"min_free_disk_bytes", options_.min_free_disk_bytes}};
  if (low) {
    not_taking_ = fmt::format("its workdir {} has {} bytes free, under [fleet] min_free_disk ({} bytes)",
                              options_.workdir, free, options_.min_free_disk_bytes);
    data["why"] = not_taking_;
    executor_.event("node.low_disk", std::nullopt, std::move(data));
  } else {
    not_taking_.clear();
    executor_.event("node.disk_ok", std::nullopt, std::move(data));
    signal_changed_ = true;  // the jobs it left waiting: look at them at the next poll
  }
}

void Agent::bump_signal() { (void)store_.put(std::string(keys::kSignal), random_token()); }

void Agent::event(const std::string& kind, const Held* held, nlohmann::json data) {
  std::optional<int64_t> local;
  if (held && held->claim.local_id > 0) local = held->claim.local_id;
  executor_.event(kind, local, std::move(data));
}

}  // namespace gpuq::fleet
