// SPDX-License-Identifier: Apache-2.0
#include "runner/cgroup_cleanup.h"

#include <algorithm>
#include <sstream>

namespace gpuq::runner {

std::vector<StrayProcess> CgroupCleanup::members(const std::string& group) {
  std::vector<StrayProcess> out;
  auto procs = files_.read(group + "/cgroup.procs");
  if (!procs) return out;
  std::istringstream in(*procs);
  for (pid_t pid; in >> pid;) {
    StrayProcess p;
    p.pid = pid;
    if (auto cmdline = files_.read("/proc/" + std::to_string(pid) + "/cmdline")) {
      p.cmdline = *cmdline;
      std::replace(p.cmdline.begin(), p.cmdline.end(), '\0', ' ');
      while (!p.cmdline.empty() && p.cmdline.back() == ' ') p.cmdline.pop_back();
    }
    out.push_back(std::move(p));
  }
  return out;
}

void CgroupCleanup::kill(Pending& pending, int64_t now_ms) {
  pending.last_kill_ms = now_ms;
  (void)files_.write(pending.group + "/cgroup.kill", "1");
}

bool CgroupCleanup::confirm_if_empty(Pending& pending) {
  auto events = files_.read(pending.group + "/cgroup.events");
  // A group that is gone (removed by someone else) holds nothing.
  bool empty = events ? !parse_populated(*events).value_or(true) : !files_.exists(pending.group);
  if (!empty) return false;
  pending.outcome.confirmed = true;
  pending.outcome.usage = read_run_usage(files_, pending.group);
  (void)files_.remove_group(pending.group);
  return true;
}

std::optional<CleanupOutcome> CgroupCleanup::add(int64_t key, const std::string& group, int64_t now_ms) {
  Pending pending;
  pending.key = key;
  pending.group = group;
  pending.deadline_ms = now_ms + limits_.limit_ms;
  pending.outcome.key = key;
  pending.outcome.by_cgroup = true;
  pending.outcome.scans = 1;
  // Usually the job ended with its shim and the group is empty: one read, no kill.
  if (confirm_if_empty(pending)) return pending.outcome;
  auto left = members(group);
  pending.outcome.killed_total = static_cast<int>(left.size());
  if (left.size() > CleanupSweep::kMaxListed) left.resize(CleanupSweep::kMaxListed);
  pending.outcome.killed = std::move(left);
  kill(pending, now_ms);
  if (confirm_if_empty(pending)) return pending.outcome;
  pending_.push_back(std::move(pending));
  return std::nullopt;
}

int64_t CgroupCleanup::next_due_ms() const {
  int64_t due = INT64_MAX;
  for (const Pending& p : pending_) {
    due = std::min({due, p.deadline_ms, p.last_kill_ms + limits_.grace_ms});
  }
  return due;
}

std::vector<CleanupOutcome> CgroupCleanup::check(int64_t now_ms) {
  std::vector<CleanupOutcome> finished;
  std::vector<Pending> kept;
  for (Pending& p : pending_) {
    ++p.outcome.scans;
    if (confirm_if_empty(p)) {
      finished.push_back(std::move(p.outcome));
      continue;
    }
    if (now_ms >= p.deadline_ms) {
      p.outcome.remaining = members(p.group);
      finished.push_back(std::move(p.outcome));
      continue;
    }
    if (now_ms - p.last_kill_ms >= limits_.grace_ms) kill(p, now_ms);
    kept.push_back(std::move(p));
  }
  pending_ = std::move(kept);
  return finished;
}

}  // namespace gpuq::runner
