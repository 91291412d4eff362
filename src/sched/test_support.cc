// SPDX-License-Identifier: Apache-2.0
#include "sched/test_support.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

namespace gpuq::sched::testing {

Snapshot machine(int count, int64_t mem_mib) {
  Snapshot s;
  for (int i = 0; i < count; ++i) {
    Gpu gpu;
    gpu.slot = i;
    gpu.memory_total_mib = mem_mib;
    gpu.memory_free_mib = mem_mib;
    s.gpus.push_back(gpu);
  }
  return s;
}

Snapshot shared_by_two(int64_t now_ms) {
  constexpr int64_t kHour = 3'600'000;
  Snapshot s = machine(1);
  s.now_ms = now_ms;
  s.running = {run(100).slots({0}).share(30000).ends(now_ms + kHour),
               run(101).slots({0}).share(40000).ends(now_ms + 2 * kHour)};
  s.gpus[0].sharers = 2;
  s.gpus[0].memory_free_mib = 10000;
  return s;
}

std::vector<int64_t> started(const Decision& decision) {
  std::vector<int64_t> ids;
  for (const Start& s : decision.starts) ids.push_back(s.job_id);
  return ids;
}

std::vector<int64_t> waiting(const Decision& decision) {
  std::vector<int64_t> ids;
  for (const Wait& w : decision.waits) ids.push_back(w.job_id);
  return ids;
}

std::vector<int> slots_of(const Decision& decision, int64_t job) {
  for (const Start& s : decision.starts) {
    if (s.job_id == job) return s.slots;
  }
  return {};
}

const WaitReason* reason_of(const Decision& decision, int64_t job) {
  for (const Wait& w : decision.waits) {
    if (w.job_id == job) return &w.reason;
  }
  return nullptr;
}

std::string text_of(const Decision& decision, const Snapshot& snapshot, int64_t job) {
  const WaitReason* reason = reason_of(decision, job);
  return reason == nullptr ? "started" : reason->text(snapshot);
}

std::string describe(const Snapshot& s) {
  std::string out =
      fmt::format("now {} policy {} cap {} unknown-limit {}\n", s.now_ms,
                  static_cast<int>(s.policy), s.max_reservations, s.backfill_unknown_limit_ms);
  for (const Gpu& g : s.gpus) {
    out += fmt::format("gpu {} usable {} mem {}/{} held {} sharers {} reservation {}\n", g.slot,
                       g.usable, g.memory_free_mib, g.memory_total_mib, g.held_exclusive, g.sharers,
                       g.reservation);
  }
  for (const auto& row : s.links) out += fmt::format("links {}\n", fmt::join(row, " "));
  for (const Reservation& r : s.reservations) {
    out += fmt::format("reservation {} slots {}\n", r.name, fmt::join(r.slots, ","));
  }
  for (const Lane& l : s.lanes) {
    out += fmt::format("lane {} capacity {} used {} excludes {}\n", l.name, l.capacity, l.used,
                       fmt::join(l.excludes, ","));
  }
  for (const RunningJob& r : s.running) {
    out +=
        fmt::format("running {} slots {} lanes {} ends {} share {} mem {}\n", r.id,
                    fmt::join(r.slots, ","), fmt::join(r.lanes, ","),
                    r.expected_end_ms ? r.expected_end_ms - s.now_ms : -1, r.share, r.gpu_mem_mib);
  }
  for (const PendingJob& j : s.queue) {
    out += fmt::format(
        "queued {} prio {} order {} gpus {} lanes {} mem {} share {} est {} timeout {} res {}\n",
        j.id, j.priority, j.queue_order, j.gpus, fmt::join(j.lanes, ","), j.gpu_mem_mib, j.share,
        j.estimate_ms, j.timeout_ms, j.reservation);
  }
  return out;
}

namespace {

// The machine as the reference sees it, built straight from the snapshot.
struct Reference {
  std::map<int, const Gpu*> gpus;            // by slot
  std::map<int, int> group;                  // slot -> reservation
  std::map<int, int> held, sharers;          // slot -> count of holders / sharers
  std::map<int, int64_t> mem;                // slot -> free memory
  std::map<int, int> whole_now, shared_now;  // started in this pass
  std::vector<int> lane_used;
  std::set<std::string> in_use;  // tokens: lane names, and "gpu"
  std::set<std::pair<std::string, std::string>> excludes;

  explicit Reference(const Snapshot& s) {
    for (const Gpu& g : s.gpus) {
      gpus[g.slot] = &g;
      group[g.slot] = g.reservation;
      mem[g.slot] = g.memory_free_mib;
      if (g.held_exclusive) held[g.slot]++;
      if (g.sharers > 0) sharers[g.slot] = g.sharers;
      if (g.held_exclusive || g.sharers > 0) in_use.insert("gpu");
    }
    for (size_t r = 0; r < s.reservations.size(); ++r) {
      for (int slot : s.reservations[r].slots) {
        if (group.count(slot) && group[slot] < 0) group[slot] = static_cast<int>(r);
      }
    }
    lane_used.assign(s.lanes.size(), 0);
    for (size_t l = 0; l < s.lanes.size(); ++l) {
      lane_used[l] = s.lanes[l].used;
      if (s.lanes[l].used > 0) in_use.insert(s.lanes[l].name);
      for (const std::string& other : s.lanes[l].excludes) {
        excludes.insert({s.lanes[l].name, other});
        excludes.insert({other, s.lanes[l].name});
      }
    }
    for (const RunningJob& run : s.running) {
      for (int slot : run.slots) (run.share ? sharers[slot] : held[slot])++;
      if (!run.slots.empty()) in_use.insert("gpu");
      for (int l : run.lanes) in_use.insert(s.lanes[l].name);
    }
  }
};

std::string check_start(const Snapshot& s, const PendingJob& job, const Start& start,
                        Reference& ref) {
  const int gpus = std::max(0, job.gpus);
  if (static_cast<int>(start.slots.size()) != gpus) {
    return fmt::format("job {} got {} GPUs, needs {}", job.id, start.slots.size(), gpus);
  }
  std::set<int> distinct(start.slots.begin(), start.slots.end());
  if (static_cast<int>(distinct.size()) != gpus)
    return fmt::format("job {} got a GPU twice", job.id);
  for (int slot : start.slots) {
    if (!ref.gpus.count(slot)) return fmt::format("job {} got unknown slot {}", job.id, slot);
    const Gpu& g = *ref.gpus[slot];
    if (!g.usable) return fmt::format("job {} got unusable GPU {}", job.id, slot);
    if (ref.group[slot] != job.reservation) {
      return fmt::format("job {} (reservation {}) got GPU {} of reservation {}", job.id,
                         job.reservation, slot, ref.group[slot]);
    }
    if (ref.held[slot] > 0 || ref.whole_now[slot] > 0) {
      return fmt::format("job {} got GPU {}, which is held", job.id, slot);
    }
    if (!job.share && (ref.sharers[slot] > 0 || ref.shared_now[slot] > 0)) {
      return fmt::format("job {} got GPU {}, which is shared", job.id, slot);
    }
    if (job.gpu_mem_mib > 0 && ref.mem[slot] < job.gpu_mem_mib) {
      return fmt::format("job {} got GPU {} with {} MiB free, needs {}", job.id, slot,
                         ref.mem[slot], job.gpu_mem_mib);
    }
  }
  std::set<std::string> tokens;
  if (gpus > 0) tokens.insert("gpu");
  for (int l : job.lanes) {
    if (l < 0 || l >= static_cast<int>(s.lanes.size()))
      return fmt::format("job {}: bad lane", job.id);
    tokens.insert(s.lanes[l].name);
  }
  for (const std::string& mine : tokens) {
    for (const std::string& other : tokens) {
      if (ref.excludes.count({mine, other})) return fmt::format("job {} excludes itself", job.id);
    }
    for (const std::string& other : ref.in_use) {
      if (ref.excludes.count({mine, other})) {
        return fmt::format("job {} ({}) started while {} is in use", job.id, mine, other);
      }
    }
  }
  std::set<int> lanes(job.lanes.begin(), job.lanes.end());
  for (int l : lanes) {
    if (ref.lane_used[l] + 1 > s.lanes[l].capacity) {
      return fmt::format("job {} overfills lane {}", job.id, s.lanes[l].name);
    }
    ++ref.lane_used[l];
  }
  for (int slot : start.slots) {
    (job.share ? ref.shared_now[slot] : ref.whole_now[slot])++;
    if (job.share) ref.mem[slot] -= std::max<int64_t>(0, job.gpu_mem_mib);
  }
  ref.in_use.insert(tokens.begin(), tokens.end());
  return "";
}

}  // namespace

std::string check_decision(const Snapshot& s, const Decision& d) {
  std::map<int64_t, const PendingJob*> queued;
  for (const PendingJob& job : s.queue) queued[job.id] = &job;
  std::map<int64_t, int> seen;
  for (const Start& st : d.starts) seen[st.job_id]++;
  for (const Wait& w : d.waits) seen[w.job_id]++;
  for (const auto& [id, n] : seen) {
    if (!queued.count(id)) return fmt::format("job {} is not queued", id);
    if (n != 1) return fmt::format("job {} decided {} times", id, n);
  }
  if (seen.size() != queued.size()) return "some queued job got no decision";
  if (s.draining && !d.starts.empty()) return "started a job while draining";
  Reference ref(s);
  for (const Start& st : d.starts) {
    std::string error = check_start(s, *queued[st.job_id], st, ref);
    if (!error.empty()) return error;
  }
  return "";
}

SimResult simulate(const Snapshot& initial, const std::map<int64_t, int64_t>& duration) {
  SimResult result;
  struct Live {
    RunningJob run;
    int64_t end;
  };
  std::vector<Live> live;
  for (const RunningJob& run : initial.running) live.push_back({run, run.expected_end_ms});
  std::vector<PendingJob> queue = initial.queue;
  int64_t now = initial.now_ms;
  for (int pass = 0; pass < 1000 && !queue.empty(); ++pass) {
    Snapshot s = initial;
    s.now_ms = now;
    s.queue = queue;
    s.running.clear();
    for (Gpu& g : s.gpus) {
      g.held_exclusive = false;
      g.sharers = 0;
      g.memory_free_mib = g.memory_total_mib;
    }
    for (Lane& lane : s.lanes) lane.used = 0;
    for (const Live& l : live) {
      s.running.push_back(l.run);
      for (int slot : l.run.slots) {
        for (Gpu& g : s.gpus) {
          if (g.slot != slot) continue;
          if (l.run.share) {
            ++g.sharers;
          } else {
            g.held_exclusive = true;
          }
          g.memory_free_mib -= l.run.gpu_mem_mib;
        }
      }
      std::set<int> lanes(l.run.lanes.begin(), l.run.lanes.end());
      for (int lane : lanes) ++s.lanes[lane].used;
    }
    Decision d = schedule(s);
    if (std::string error = check_decision(s, d); !error.empty() && result.error.empty()) {
      result.error = fmt::format("at t={}: {}", now, error);
    }
    for (const Start& st : d.starts) {
      auto it = std::find_if(queue.begin(), queue.end(),
                             [&](const PendingJob& j) { return j.id == st.job_id; });
      Live l;
      l.run.id = it->id;
      l.run.slots = st.slots;
      l.run.lanes = it->lanes;
      l.run.share = it->share;
      l.run.gpu_mem_mib = it->gpu_mem_mib;
      int64_t told = it->estimate_ms > 0 ? it->estimate_ms : it->timeout_ms;
      l.run.expected_end_ms = told > 0 ? now + told : 0;
      const int64_t length = duration.at(it->id);
      l.end = length >= kForever ? kForever : now + length;
      live.push_back(l);
      result.start[it->id] = now;
      queue.erase(it);
    }
    result.passes.push_back(std::move(d));
    if (queue.empty() || live.empty()) break;
    int64_t next = live[0].end;
    for (const Live& l : live) next = std::min(next, l.end);
    if (next >= kForever) break;  // only work that never ends is left
    now = std::max(now, next);
    std::erase_if(live, [&](const Live& l) { return l.end <= now; });
  }
  return result;
}

}  // namespace gpuq::sched::testing
