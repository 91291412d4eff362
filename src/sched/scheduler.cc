// SPDX-License-Identifier: Apache-2.0
// One scheduling pass: walks the queue in order and, for each job, either starts it (the
// Machine says its resources are free now and the Profile says it delays no reservation)
// or records why it waits and makes sure no worse job takes what it needs — through a
// reservation in the Profile (backfill, up to the cap) or by holding its resources back for
// the rest of the pass (kPriority, kFifo, and past the cap). See scheduler.h for the policy.
#include "sched/scheduler.h"

#include <algorithm>
#include <bit>
#include <deque>
#include <limits>

#include "sched/backfill.h"
#include "sched/fair_share.h"
#include "sched/machine.h"
#include "sched/order.h"
#include "sched/placement.h"

namespace gpuq::sched {
namespace {

WaitReason draining_reason() {
  WaitReason reason;
  reason.kind = WaitReason::Kind::kDraining;
  return reason;
}

// protect()'s answer for a job past the reservation cap that could start in finite time.
constexpr int64_t kStartsSometime = kInfinity - 2;
// How many waiting jobs, reserved or not, get that answer (bounds its cost per pass).
constexpr int kExplainedDepth = 32;

class Pass {
 public:
  Pass(const Snapshot& snapshot, Decision buffers)
      : snapshot_(snapshot),
        machine_(snapshot),
        profile_(machine_, snapshot),
        placer_(machine_),
        cap_(snapshot.policy == Policy::kBackfill ? std::max(0, snapshot.max_reservations) : 0),
        pool_waiting_(machine_.pool_count(), 0),
        decision_(std::move(buffers)) {
    decision_.starts.clear();
    decision_.waits.clear();
    decision_.latest_reserved_start_ms = -1;
    for (const Owner& owner : snapshot.owners) {
      if (owner.max_gpus >= 0 || owner.max_running >= 0) limited_ = true;
    }
    if (limited_) {
      owner_gpus_.assign(snapshot.owners.size(), 0);
      owner_running_.assign(snapshot.owners.size(), 0);
      for (const RunningJob& run : snapshot.running) {
        charge_owner(run.owner, static_cast<int>(run.slots.size()));
      }
    }
  }

  Decision run();

 private:
  void consider(const PendingJob& job);
  // Whether starting `job` would take its owner past a limit; fills `reason` when it would.
  bool over_user_limit(const PendingJob& job, WaitReason& reason) const;
  void charge_owner(int owner, int gpus);
  void start(const Need& need, const GpuSet& available);
  // `need.gpus` GPUs of `available`, as many as it can from `preferred`.
  GpuSet choose_preferring(const GpuSet& preferred, const GpuSet& available, const Need& need,
                           const GpuSet& shared) const;
  // Holds what a waiting job needs against worse jobs; returns its reserved start, if any.
  int64_t protect(const Need& need, const GpuSet& could_take);
  WaitReason explain(const Need& need, const GpuSet& free, const GpuSet& open,
                     const GpuSet& could_take, const Claim* conflict, int64_t own_start) const;
  WaitReason explain_impossible(const Need& need, const GpuSet& could_take) const;
  void count_waiting(const Need& need);
  int64_t in_ms(int64_t at) const { return at >= kInfinity - 1 ? -1 : at - machine_.now(); }

  const Snapshot& snapshot_;
  Machine machine_;
  Profile profile_;
  Placer placer_;
  const int cap_;
  std::vector<int> pool_waiting_;  // GPU jobs waiting so far, per pool (for reasons)
  // Per pool, by GPU count g: the shortest window refused to a plain job of at most g GPUs
  // this pass, and the reservation in its way (an index into refused_conflicts_, or -1).
  struct Refusal {
    int64_t window = std::numeric_limits<int64_t>::max();
    int64_t conflict = -1;
  };
  const Refusal* refusal_for(const Need& need) const;
  void record_refusal(const Need& need, int64_t window, int64_t conflict);
  std::vector<std::vector<Refusal>> refused_;
  std::deque<Claim> refused_conflicts_;  // copies; a deque keeps them in place as it grows
  int waiting_ = 0;
  // Per owner, what their running jobs and this pass's starts hold (only when a limit is set).
  bool limited_ = false;
  std::vector<int64_t> owner_gpus_;
  std::vector<int64_t> owner_running_;
  Decision decision_;
};

Decision Pass::run() {
  const std::vector<PendingJob>& jobs = snapshot_.queue;
  if (snapshot_.reasons) decision_.waits.reserve(jobs.size());
  if (snapshot_.draining && !snapshot_.reasons) return std::move(decision_);
  const bool fair = fair_share_applies(snapshot_);
  // The daemon lends its queue in scheduling order: then it is walked as it is, and no
  // index of the queue's size is built (nor its memory faulted in) for every pass.
  if (!fair && in_scheduling_order(snapshot_)) {
    if (snapshot_.draining) {
      for (const PendingJob& job : jobs) decision_.waits.push_back({job.id, draining_reason()});
    } else {
      for (const PendingJob& job : jobs) consider(job);
    }
    return std::move(decision_);
  }
  std::vector<uint32_t> order =
      fair ? fair_share_order(snapshot_) : scheduling_order(jobs, snapshot_.policy);
  if (snapshot_.draining) {
    for (uint32_t index : order) decision_.waits.push_back({jobs[index].id, draining_reason()});
    return std::move(decision_);
  }
  // Scheduling order visits the queue out of its memory order: fetch a few jobs ahead, or
  // the pass spends half its time waiting for memory on deep queues.
  constexpr size_t kAhead = 16;
  const PendingJob* queue = jobs.data();
  for (size_t i = 0; i < order.size(); ++i) {
    if (i + kAhead < order.size()) {
      const char* ahead = reinterpret_cast<const char*>(queue + order[i + kAhead]);
      __builtin_prefetch(ahead);
      __builtin_prefetch(ahead + sizeof(PendingJob) - 1);
    }
    consider(queue[order[i]]);
  }
  return std::move(decision_);
}

bool Pass::over_user_limit(const PendingJob& job, WaitReason& reason) const {
  if (!limited_ || job.owner < 0 || static_cast<size_t>(job.owner) >= owner_gpus_.size()) {
    return false;
  }
  const Owner& owner = snapshot_.owners[job.owner];
  reason.kind = WaitReason::Kind::kUserLimit;
  reason.needed = narrow_to<int16_t>(std::max(0, job.gpus));
  if (owner.max_running >= 0 && owner_running_[job.owner] + 1 > owner.max_running) {
    reason.running_limit = true;
    reason.limit = narrow_to<int32_t>(owner.max_running);
    reason.in_use = narrow_to<int32_t>(owner_running_[job.owner]);
    return true;
  }
  if (owner.max_gpus >= 0 && owner_gpus_[job.owner] + reason.needed > owner.max_gpus) {
    reason.limit = narrow_to<int32_t>(owner.max_gpus);
    reason.in_use = narrow_to<int32_t>(owner_gpus_[job.owner]);
    return true;
  }
  return false;
}

void Pass::charge_owner(int owner, int gpus) {
  if (!limited_ || owner < 0 || static_cast<size_t>(owner) >= owner_gpus_.size()) return;
  owner_gpus_[owner] += gpus;
  ++owner_running_[owner];
}

void Pass::consider(const PendingJob& job) {
  // A job its owner's limits keep back waits and holds nothing back: others may use what it
  // would have taken.
  if (WaitReason limit; over_user_limit(job, limit)) {
    if (snapshot_.reasons) decision_.waits.push_back({job.id, limit});
    return;
  }
  if (job.gpus <= 0 && job.lanes.empty()) {
    decision_.starts.push_back({job.id, {}});  // needs nothing that anyone could wait for
    charge_owner(job.owner, 0);
    return;
  }
  const Need need = machine_.need_of(job);
  const GpuSet could_take = machine_.could_ever_take(need);
  if (!machine_.lanes_possible(need) || !could_take.has_at_least(need.gpus)) {
    if (snapshot_.reasons) {
      decision_.waits.push_back({need.id, explain_impossible(need, could_take)});
    }
    return;
  }
  const Claim* conflict = nullptr;
  const bool lanes_open = machine_.full_lane(need) < 0 && machine_.held_back_lane(need) < 0 &&
                          (need.excludes & machine_.tokens_now()) == 0 &&
                          (need.tokens & machine_.barred()) == 0;
  GpuSet free, open;
  if (need.gpus > 0) {
    free = machine_.free_for(need);
    open = minus(free, machine_.held_back_gpus());
  }
  if (lanes_open && open.has_at_least(need.gpus)) {
    if (profile_.reservations() == 0) return start(need, open);
    const int64_t now = machine_.now();
    // A job of unknown length is checked over the limit only: it may use what a better job
    // needs only when that job's reservation starts at least that far ahead.
    int64_t window = need.known_duration                       ? need.duration
                     : snapshot_.backfill_unknown_limit_ms > 0 ? snapshot_.backfill_unknown_limit_ms
                                                               : kInfinity;
    const int64_t end = add_time(now, window);
    // A plain job (whole GPUs, no lanes) refused over a window is refused to every later
    // plain job of its pool with as many GPUs or more over as long or longer: the profile
    // only grows and the free GPUs only shrink during a pass (window.h's P3, here used to
    // keep a deep queue cheap now that waiting jobs hold nothing back).
    const bool plain = need.lanes == 0 && !need.share && need.mem == 0 && need.pool >= 0;
    if (const Refusal* refused = plain ? refusal_for(need) : nullptr;
        refused != nullptr && window >= refused->window) {
      conflict = refused->conflict >= 0 ? &refused_conflicts_[refused->conflict] : nullptr;
    } else {
      GpuSet available;
      if (profile_.fits(need, now, end, open, &available)) return start(need, available);
      // Copied: the profile's claims move when protect() adds one. For reasons only.
      if (const Claim* c = snapshot_.reasons ? profile_.blocking_reservation(need, now, end, open)
                                             : nullptr) {
        refused_conflicts_.push_back(*c);
        conflict = &refused_conflicts_.back();
      }
      if (plain) record_refusal(need, window, conflict ? refused_conflicts_.size() - 1 : -1);
    }
  }
  const int64_t own_start = protect(need, could_take);
  if (snapshot_.reasons) {
    decision_.waits.push_back(
        {need.id, explain(need, free, open, could_take, conflict, own_start)});
  }
  count_waiting(need);
}

GpuSet Pass::choose_preferring(const GpuSet& preferred, const GpuSet& available, const Need& need,
                               const GpuSet& shared) const {
  const GpuSet first = preferred & available;
  if (first.has_at_least(need.gpus)) return placer_.choose(first, need.gpus, need, shared);
  const int rest = need.gpus - first.count();
  if (first.none() || rest <= 0) return placer_.choose(available, need.gpus, need, shared);
  return first | placer_.choose(minus(available, first), rest, need, shared);
}

const Pass::Refusal* Pass::refusal_for(const Need& need) const {
  if (static_cast<size_t>(need.pool) >= refused_.size() || refused_[need.pool].empty()) {
    return nullptr;
  }
  const Refusal& r = refused_[need.pool][std::min(need.gpus, machine_.gpu_count())];
  return r.window != std::numeric_limits<int64_t>::max() ? &r : nullptr;
}

void Pass::record_refusal(const Need& need, int64_t window, int64_t conflict) {
  if (refused_.size() <= static_cast<size_t>(need.pool)) refused_.resize(need.pool + 1);
  std::vector<Refusal>& by_gpus = refused_[need.pool];
  if (by_gpus.empty()) by_gpus.assign(machine_.gpu_count() + 1, Refusal{});
  for (int g = std::min(need.gpus, machine_.gpu_count()); g <= machine_.gpu_count(); ++g) {
    if (window >= by_gpus[g].window) break;  // entries only fall as g grows past a record
    by_gpus[g] = {window, conflict};
  }
}

void Pass::start(const Need& need, const GpuSet& available) {
  // A job that ends before a reservation takes that reservation's GPUs first, leaving the
  // others to jobs that run past it.
  GpuSet chosen = choose_preferring(profile_.reserved_gpus(), available, need,
                                    machine_.shared_now());
  machine_.apply_start(need, chosen);
  charge_owner(need.owner, need.gpus);
  Claim claim;
  claim.start = machine_.now();
  claim.end = add_time(machine_.now(), need.duration);
  claim.job = need.id;
  claim.gpus = chosen;
  claim.tokens = need.tokens;
  claim.mem = need.mem;
  claim.share = need.share;
  profile_.add(claim);
  Start started{need.id, {}};
  started.slots.reserve(need.gpus);
  for (int g : members(chosen)) started.slots.push_back(machine_.gpu(g).slot);
  decision_.starts.push_back(std::move(started));
}

int64_t Pass::protect(const Need& need, const GpuSet& could_take) {
  if (profile_.reservations() >= cap_) {
    if (cap_ == 0) {  // kPriority, kFifo: hold its resources back from worse jobs
      machine_.hold_back(need, could_take);
      return kInfinity;
    }
    // Past the cap, backfill protects no more jobs: this one just waits, as under EASY. For
    // its reason (and preemption.h, which reads it), the first waiting jobs learn whether
    // they could start in finite time at all; when is no promise, so it is not said.
    if (!snapshot_.reasons || waiting_ >= kExplainedDepth) return kInfinity;
    return profile_.earliest_after(need, machine_.now(), could_take).start < kInfinity
               ? kStartsSometime
               : kInfinity;
  }
  Slot slot = profile_.earliest_after(need, machine_.now(), could_take);
  Claim claim;
  claim.job = need.id;
  claim.tokens = need.tokens;
  claim.reserved = true;
  if (slot.start < kInfinity) {
    claim.start = slot.start;
    claim.end = add_time(slot.start, need.duration);
    // Reserve GPUs that are busy now before free ones: the free ones are what a job running
    // past the reservation's start can use now (EASY's "extra" GPUs).
    claim.gpus = choose_preferring(minus(slot.available, machine_.free_for(need)),
                                   slot.available, need, GpuSet{});
  } else {
    // It waits on something held forever: reserve at "infinity" every GPU it could take,
    // so that only work that might never end is kept off them.
    claim.start = kInfinity - 1;
    claim.end = kInfinity;
    claim.gpus = could_take;
  }
  profile_.add(claim);
  decision_.latest_reserved_start_ms =
      std::max(decision_.latest_reserved_start_ms,
               claim.start >= kInfinity - 1 ? std::numeric_limits<int64_t>::max() : claim.start);
  return claim.start;
}

void Pass::count_waiting(const Need& need) {
  ++waiting_;
  if (need.gpus > 0 && need.pool >= 0) ++pool_waiting_[need.pool];
  for (TokenSet rest = need.lanes; rest != 0; rest &= rest - 1) {
    ++machine_.lane(std::countr_zero(rest)).waiting;
  }
}

WaitReason Pass::explain(const Need& need, const GpuSet& free, const GpuSet& open,
                         const GpuSet& could_take, const Claim* conflict, int64_t own_start) const {
  using Kind = WaitReason::Kind;
  WaitReason r;
  r.needed = narrow_to<int16_t>(need.gpus);
  if (int l = machine_.full_lane(need); l >= 0) {
    const LaneState& lane = machine_.lanes()[l];
    r.kind = Kind::kLaneBusy;
    r.lane = narrow_to<int16_t>(l);
    r.job = lane.holder;
    r.next_free_in_ms = in_ms(lane.free_at);
    return r;
  }
  if (TokenSet hit = need.excludes & machine_.tokens_now(); hit != 0) {
    const int other = std::countr_zero(hit);
    int side = kGpuToken;
    for (TokenSet rest = need.tokens; rest != 0; rest &= rest - 1) {
      if (machine_.excludes_of(std::countr_zero(rest)) & token_bit(other)) {
        side = std::countr_zero(rest);
        break;
      }
    }
    r.kind = Kind::kLaneExcluded;
    r.lane = narrow_to<int16_t>(side == kGpuToken ? WaitReason::kGpuWork : side);
    r.other_lane = narrow_to<int16_t>(other == kGpuToken ? WaitReason::kGpuWork : other);
    r.job = machine_.token_holder(other);
    return r;
  }
  if (need.gpus > 0) {
    r.free = narrow_to<int16_t>(free.count());
    r.better_jobs = narrow_to<int32_t>(pool_waiting_[need.pool]);
    if (r.free < need.gpus) {
      if (need.pool > 0) {
        r.kind = Kind::kReservation;
        r.reservation = narrow_to<int16_t>(need.pool - 1);
      } else if (need.mem > 0 && machine_.free_ignoring_memory(need).count() >= need.gpus) {
        r.kind = Kind::kNoGpuMemory;
        r.gpu_mem_mib = narrow_to<int32_t>(need.mem);
      } else if (own_start < kInfinity - 1 || r.better_jobs == 0) {
        r.kind = Kind::kNeedsGpus;
        int64_t start = own_start == kStartsSometime ? kInfinity : own_start;
        if (start >= kInfinity && r.better_jobs == 0 && own_start != kStartsSometime) {
          // No reservation was made (kPriority or past the cap), but this is the first job
          // waiting for its pool, so its expected start is worth one profile search.
          start = profile_.earliest_after(need, machine_.now(), could_take).start;
        }
        r.next_free_in_ms = in_ms(start);
      } else {
        r.kind = Kind::kBehindBetterJobs;
      }
      return r;
    }
  }
  // What it needs is free, but held for better jobs.
  if (conflict != nullptr && conflict->start < kInfinity - 1) {
    r.kind = Kind::kReservedForBetter;
    r.job = conflict->job;
    r.next_free_in_ms = in_ms(conflict->start);
    return r;
  }
  r.kind = Kind::kBehindBetterJobs;
  bool gpus_held = need.gpus > 0 && !open.has_at_least(need.gpus);
  if (!gpus_held && (conflict == nullptr || !conflict->gpus.intersects(could_take))) {
    int l = machine_.held_back_lane(need);
    if (l < 0 && need.lanes != 0) l = std::countr_zero(need.lanes);
    if (l >= 0) {
      r.lane = narrow_to<int16_t>(l);
      r.better_jobs = narrow_to<int32_t>(machine_.lanes()[l].waiting);
    }
  }
  if (r.better_jobs == 0) r.better_jobs = narrow_to<int32_t>(waiting_);
  return r;
}

WaitReason Pass::explain_impossible(const Need& need, const GpuSet& could_take) const {
  using Kind = WaitReason::Kind;
  WaitReason r;
  r.needed = narrow_to<int16_t>(need.gpus);
  r.usable = narrow_to<int16_t>(could_take.count());
  r.free = narrow_to<int16_t>(machine_.free_for(need).count());
  if (need.bad_lane >= 0) {
    r.kind = Kind::kLaneBusy;
    r.lane = narrow_to<int16_t>(need.bad_lane);
    return r;
  }
  for (TokenSet rest = need.lanes; rest != 0; rest &= rest - 1) {
    if (machine_.lanes()[std::countr_zero(rest)].capacity < 1) {
      r.kind = Kind::kLaneBusy;
      r.lane = narrow_to<int16_t>(std::countr_zero(rest));
      return r;
    }
  }
  if (TokenSet hit = need.excludes & need.tokens; hit != 0) {
    int a = std::countr_zero(hit);
    int b = std::countr_zero(machine_.excludes_of(a) & need.tokens);
    r.kind = Kind::kLaneExcluded;
    r.lane = narrow_to<int16_t>(a == kGpuToken ? WaitReason::kGpuWork : a);
    r.other_lane = narrow_to<int16_t>(b == kGpuToken ? WaitReason::kGpuWork : b);
    r.job = -1;  // by its own needs
    return r;
  }
  if (need.pool != 0 && machine_.pool_set(need.pool).none()) {
    r.kind = Kind::kReservation;
    r.reservation = narrow_to<int16_t>(need.reservation);
    return r;
  }
  if (need.mem > 0 && (machine_.pool_set(need.pool) & machine_.usable()).count() >= need.gpus) {
    r.kind = Kind::kNoGpuMemory;
    r.gpu_mem_mib = narrow_to<int32_t>(need.mem);
    return r;
  }
  r.kind = Kind::kNeedsGpus;
  return r;
}

}  // namespace

void sort_queue(std::vector<PendingJob>& queue, Policy policy) {
  std::stable_sort(queue.begin(), queue.end(), [policy](const PendingJob& a, const PendingJob& b) {
    if (policy != Policy::kFifo && a.priority != b.priority) return a.priority < b.priority;
    return a.queue_order < b.queue_order;
  });
}

Decision schedule(const Snapshot& snapshot) { return Pass(snapshot, Decision{}).run(); }

Decision schedule_reusing(const Snapshot& snapshot, Decision buffers) {
  // With room to grow: a queue one job longer than the buffer (a release) must not allocate
  // it all again. A sixteenth: the daemon keeps two of these (the published waits and the
  // spare), 80 bytes a queued job each, and a queue seldom grows by more between passes.
  const size_t n = snapshot.queue.size();
  if (buffers.waits.capacity() < n) buffers.waits.reserve(n + n / 16 + 64);
  return Pass(snapshot, std::move(buffers)).run();
}

}  // namespace gpuq::sched
