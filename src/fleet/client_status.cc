// SPDX-License-Identifier: Apache-2.0
// `fleet status` (docs/fleet.md, "gpuq fleet status"): the nodes, the queue entries and the
// latest ends. Its cost does not grow by a GET per queued job: one listing of `queues/` gives
// every entry's queue, priority, submission time and id (the key says them); the spec, claim
// and cancel marker are read only for the rows shown: the jobs the heartbeats say are running,
// and the best `queued_rows` entries across the queues. The rest are counted per queue.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "fleet/client.h"
#include "fleet/client_internal.h"

namespace gpuq::fleet {

using detail::is_code;

namespace {

// The queue prefix of an entry key ("queues/class/any/"), or "" for a stray key.
std::string queue_of(std::string_view key) {
  for (std::string_view base : {keys::kClassQueues, keys::kNodeQueues}) {
    if (!key.starts_with(base)) continue;
    size_t slash = key.find('/', base.size());
    if (slash == std::string_view::npos) return "";
    return std::string(key.substr(0, slash + 1));
  }
  return "";
}

// A status row for job `id` from its spec and claim (and, while a node holds it, its cancel
// marker). A spec or claim that is missing or unreadable still gives a row (with the reason);
// an unreachable store is an error.
Result<JobStatus> job_row(ObjectStore& store, const std::string& id) {
  JobStatus row;
  row.id = id;
  auto job = read_job(store, id);
  if (job) {
    row.name = job->name;
    row.klass = job->klass;
    row.node = job->node;
    row.priority = job->spec.priority;
    row.submitted_ms = job->submitted_ms;
    row.gpus = job->spec.gpus;
    row.gpu = pinned_gpu(job->spec);
  } else if (is_code(job.error(), Code::kNotFound) || is_code(job.error(), Code::kCorruption)) {
    row.reason = job.error().message;
  } else {
    return tl::unexpected(job.error());
  }
  auto claim = read_claim(store, id);
  std::optional<Claim> held;
  if (claim && *claim) held = (*claim)->claim;
  if (!claim && !is_code(claim.error(), Code::kCorruption)) return tl::unexpected(claim.error());
  if (!claim) row.reason = claim.error().message;
  row.state = job_state(held);
  if (held) {
    if (!held->node.empty()) row.node = held->node;
    row.attempt = held->attempt;
    row.runs = held->runs;
    row.exit_code = held->exit_code;
    if (row.reason.empty()) row.reason = held->reason;
  }
  // An unclaimed job's cancel ends it at once (its claim says cancelled): only a held job
  // shows a cancel that is still being carried out.
  if (held && held->state == kRunning) {
    auto cancel = detail::cancel_requested(store, id);
    if (cancel) row.cancel_requested = *cancel;
  }
  return row;
}

// The entries of `queues/` once each, in key order (queue by queue, best first in each).
Result<std::vector<std::pair<QueueEntry, std::string>>> list_entries(ObjectStore& store) {
  auto listing = store.list("queues/");
  if (!listing) return tl::unexpected(listing.error());
  std::vector<std::pair<QueueEntry, std::string>> entries;
  std::set<std::string> seen;
  for (const auto& info : listing->objects) {
    std::string queue = queue_of(info.key);
    auto entry = queue.empty() ? std::nullopt : parse_entry(queue, info.key);
    if (entry && seen.insert(entry->id).second) entries.emplace_back(std::move(*entry), std::move(queue));
  }
  return entries;
}

// Which entries get a row: those a heartbeat says are running, and the best `limit` of the
// rest across every queue (the ones nodes take next); all of them for a limit of 0.
std::vector<bool> rows_to_show(const std::vector<std::pair<QueueEntry, std::string>>& entries,
                               const std::vector<NodeStatus>& nodes, size_t limit) {
  std::vector<bool> shown(entries.size(), limit == 0);
  if (limit == 0) return shown;
  std::set<std::string> running;
  for (const auto& node : nodes) running.insert(node.running.begin(), node.running.end());
  std::vector<size_t> waiting;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (running.count(entries[i].first.id)) {
      shown[i] = true;
    } else {
      waiting.push_back(i);
    }
  }
  auto better = [&](size_t a, size_t b) {
    const QueueEntry& x = entries[a].first;
    const QueueEntry& y = entries[b].first;
    return std::tie(x.priority, x.submitted_ms, x.id) < std::tie(y.priority, y.submitted_ms, y.id);
  };
  size_t take = std::min(limit, waiting.size());
  std::partial_sort(waiting.begin(), waiting.begin() + static_cast<std::ptrdiff_t>(take), waiting.end(), better);
  for (size_t k = 0; k < take; ++k) shown[waiting[k]] = true;
  return shown;
}

}  // namespace

Result<FleetStatus> status(ObjectStore& store, const StatusOptions& options) {
  FleetStatus result;
  auto nodes = read_nodes(store);
  if (!nodes) return tl::unexpected(nodes.error());
  result.nodes = std::move(*nodes);

  auto entries = list_entries(store);
  if (!entries) return tl::unexpected(entries.error());
  std::vector<bool> shown = rows_to_show(*entries, result.nodes, options.queued_rows);
  std::map<std::string, QueueCount> counts;
  std::set<std::string> seen;
  for (size_t i = 0; i < entries->size(); ++i) {
    const auto& [entry, queue] = (*entries)[i];
    seen.insert(entry.id);
    QueueCount& count = counts[queue];
    count.queue = queue;
    ++count.entries;
    if (!shown[i]) {
      ++result.not_shown;
      continue;
    }
    ++count.shown;
    auto row = job_row(store, entry.id);
    if (!row) return tl::unexpected(row.error());
    row->queue = queue;
    row->priority = entry.priority;
    row->submitted_ms = entry.submitted_ms;
    result.jobs.push_back(std::move(*row));
  }
  for (auto& [queue, count] : counts) result.queues.push_back(std::move(count));

  auto ends = store.list(std::string(keys::kEnded));
  if (!ends) return tl::unexpected(ends.error());
  size_t listed = 0;
  for (auto it = ends->objects.rbegin(); it != ends->objects.rend() && listed < kRecentEnds; ++it) {
    auto ended = parse_ended_key(it->key);
    if (!ended || !seen.insert(ended->second).second) continue;
    auto row = job_row(store, ended->second);
    if (!row) return tl::unexpected(row.error());
    row->queue = std::string(keys::kEnded);
    row->ended_ms = ended->first;
    result.jobs.push_back(std::move(*row));
    ++listed;
  }
  return result;
}

}  // namespace gpuq::fleet
