// SPDX-License-Identifier: Apache-2.0
#include "runner/cleanup.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <string_view>
#include <unordered_map>

namespace gpuq::runner {

std::optional<uid_t> default_sweep_uid() {
  uid_t euid = ::geteuid();
  if (euid == 0) return std::nullopt;
  return euid;
}

CleanupSweep::CleanupSweep(os::ProcessTable& table, CleanupLimits limits,
                           std::optional<uid_t> only_uid)
    : table_(table), limits_(limits), only_uid_(only_uid) {}

void CleanupSweep::add(CleanupTarget target, int64_t now_ms) {
  // A sweep with nothing pending scans a new target at once, however recent its last scan:
  // the usual run leaves nothing behind, and its GPU should serve again one poll after it ends.
  // Scans stay at most two per poll (a confirmation needs a scan a poll after the first).
  if (targets_.empty()) last_scan_ms_.reset();
  Pending pending;
  pending.added_ms = now_ms;
  pending.deadline_ms = now_ms + limits_.limit_ms;
  pending.outcome.key = target.key;
  pending.target = std::move(target);
  targets_.push_back(std::move(pending));
}

int64_t CleanupSweep::next_scan_ms() const {
  int64_t earliest = INT64_MAX;
  for (const auto& p : targets_) earliest = std::min(earliest, p.added_ms);
  if (!last_scan_ms_) return earliest;
  return std::max(earliest, *last_scan_ms_ + limits_.poll_ms);
}

const std::string& CleanupSweep::user(uid_t uid) {
  auto it = users_.find(uid);
  if (it == users_.end()) it = users_.emplace(uid, os::user_name(uid)).first;
  return it->second;
}

StrayProcess CleanupSweep::describe(const os::ProcessFacts& facts) {
  return StrayProcess{facts.pid, facts.start_ticks, facts.uid, user(facts.uid),
                      table_.cmdline(facts.pid)};
}

void CleanupSweep::scan(std::vector<Found>& found, std::vector<bool>& tainted, int64_t now_ms) {
  std::unordered_map<std::string_view, std::vector<size_t>> by_run;
  uint64_t oldest = UINT64_MAX;
  for (size_t i = 0; i < targets_.size(); ++i) {
    by_run[targets_[i].target.run_id].push_back(i);
    oldest = std::min(oldest, targets_[i].target.started_ticks);
  }
  // Marks the targets that a process which vanished unexamined could belong to.
  auto taint = [&](uint64_t started_by) {
    for (size_t i = 0; i < targets_.size(); ++i) {
      if (targets_[i].target.started_ticks <= started_by) tainted[i] = true;
    }
  };

  // Read before the listing: a process made after this reading has a pid above it.
  const std::optional<pid_t> last_pid = table_.last_pid();
  const bool known = known_last_pid_ && last_pid && *last_pid >= *known_last_pid_ &&
                     now_ms >= known_at_ms_ && now_ms - known_at_ms_ <= kKnownStartsMs;
  std::unordered_map<pid_t, uint64_t> starts;
  for (pid_t pid : table_.pids()) {
    if (known) {
      auto seen = known_starts_.find(pid);
      const bool given_since = pid > *known_last_pid_ && pid <= *last_pid;
      if (seen != known_starts_.end() && !given_since && seen->second < oldest) {
        starts.emplace(pid, seen->second);  // the same old process: nothing of it to read
        continue;
      }
    }
    auto facts = table_.facts(pid);
    if (!facts) {  // vanished before we learnt when it started or whose it was
      taint(UINT64_MAX);
      continue;
    }
    starts.emplace(pid, facts->start_ticks);
    if (facts->zombie || pid == 2 || facts->ppid == 2) continue;  // dead, or a kernel thread
    if (facts->start_ticks < oldest) continue;
    if (only_uid_ && facts->uid != *only_uid_) continue;
    auto marker = table_.env_value(pid, kRunMarkerVariable);
    if (!marker) {
      // No marker, or it vanished while we read: only the latter leaves doubt.
      auto again = table_.facts(pid);
      if (!again || again->zombie || again->start_ticks != facts->start_ticks) {
        taint(facts->start_ticks);
      }
      continue;
    }
    auto it = by_run.find(*marker);
    if (it == by_run.end()) continue;
    for (size_t i : it->second) {
      if (facts->start_ticks >= targets_[i].target.started_ticks) found.push_back({i, *facts});
    }
  }
  known_starts_ = std::move(starts);
  known_last_pid_ = last_pid;
  known_at_ms_ = now_ms;
}

void CleanupSweep::signal_found(Pending& pending, const std::vector<const os::ProcessFacts*>& mine,
                                int64_t now_ms) {
  std::map<std::pair<pid_t, uint64_t>, Tracked> seen;
  for (const os::ProcessFacts* facts : mine) {
    std::pair<pid_t, uint64_t> id{facts->pid, facts->start_ticks};
    auto it = pending.tracked.find(id);
    Tracked t;
    if (it == pending.tracked.end()) {
      t.process = describe(*facts);
      t.last_signal_ms = now_ms;
      auto sent = table_.signal(facts->pid, facts->start_ticks, SIGTERM);
      t.gone = sent == os::SignalResult::kGone;
      if (sent == os::SignalResult::kSent) {
        // A stopped process would not act on SIGTERM until continued.
        (void)table_.signal(facts->pid, facts->start_ticks, SIGCONT);
        ++pending.outcome.killed_total;
        if (pending.outcome.killed.size() < kMaxListed) pending.outcome.killed.push_back(t.process);
      }
    } else {
      t = std::move(it->second);
      if (now_ms - t.last_signal_ms >= limits_.grace_ms) {
        auto sent = table_.signal(facts->pid, facts->start_ticks, SIGKILL);
        t.killed = true;
        t.last_signal_ms = now_ms;
        t.gone = sent == os::SignalResult::kGone;
      } else {
        t.gone = false;
      }
    }
    seen[id] = std::move(t);
  }
  pending.tracked = std::move(seen);  // what this scan did not find is gone
}

std::vector<CleanupOutcome> CleanupSweep::step(int64_t now_ms) {
  std::vector<CleanupOutcome> finished;
  if (targets_.empty() || now_ms < next_scan_ms()) return finished;
  last_scan_ms_ = now_ms;

  std::vector<Found> found;
  std::vector<bool> tainted(targets_.size(), false);
  scan(found, tainted, now_ms);
  std::vector<std::vector<const os::ProcessFacts*>> mine(targets_.size());
  for (const Found& f : found) mine[f.target].push_back(&f.facts);

  std::vector<bool> done(targets_.size(), false);
  for (size_t i = 0; i < targets_.size(); ++i) {
    Pending& p = targets_[i];
    ++p.outcome.scans;
    signal_found(p, mine[i], now_ms);
    if (!mine[i].empty()) {
      p.empty_scans = 0;
    } else if (!tainted[i] && (p.empty_scans == 0 || now_ms - p.last_empty_ms >= limits_.poll_ms)) {
      // A poll after the last counted one, whatever brought this scan: next_scan_ms() gives a
      // busy sweep no scan sooner today, but the confirmation must not rest on that alone.
      ++p.empty_scans;
      p.last_empty_ms = now_ms;
    }
    if (p.empty_scans >= 2) {
      p.outcome.confirmed = true;
    } else if (now_ms >= p.deadline_ms) {
      for (auto& [id, t] : p.tracked) {
        if (!t.gone) p.outcome.remaining.push_back(std::move(t.process));
      }
    } else {
      continue;
    }
    done[i] = true;
    finished.push_back(std::move(p.outcome));
  }
  size_t kept = 0;
  for (size_t i = 0; i < targets_.size(); ++i) {
    if (done[i]) continue;
    if (kept != i) targets_[kept] = std::move(targets_[i]);
    ++kept;
  }
  targets_.resize(kept);
  return finished;
}

}  // namespace gpuq::runner
