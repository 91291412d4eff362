// SPDX-License-Identifier: Apache-2.0
// `gpuq fleet move --from NODE --to NODE` (docs/fleet.md, "Protocol", "Move"): the jobs pinned
// to one node, re-pinned to another. The only writer that changes a spec.json.
#include <fmt/format.h>

#include "fleet/client.h"
#include "fleet/client_internal.h"

namespace gpuq::fleet {

using detail::is_code;

namespace {

struct MoveContext {
  ObjectStore& store;
  std::string from;
  std::string to;
  int64_t stale_after_ms = 0;  // a claim of `from` not rewritten for longer may be taken
  bool from_stale = false;
  int64_t now_ms = 0;
};

MovedEntry skipped(const FleetJob& job, std::string why) {
  return MovedEntry{job.id, job.name, MovedEntry::Action::kSkipped, std::move(why)};
}

// Fences a claim left by a stale `from` (or by a move that stopped half way: node "") and
// removes it. The replace on the ETag we read succeeds only if no one wrote the claim since,
// and it changes the ETag, so every later write of the old holder (renewal, outcome) fails
// with 412 and it stops. Then the claim is removed, so that `to` can create its own.
// Returns "" on success, else why the job stays.
Result<std::string> take_over(MoveContext& m, const FleetJob& job, const ClaimRead& read) {
  const Claim& held = read.claim;
  if (held.node == m.from && !m.from_stale) {
    return fmt::format("running on {}, whose heartbeat is fresh: wait for it, or cancel it", m.from);
  }
  if (held.node == m.from && (read.age_ms < 0 || read.age_ms <= m.stale_after_ms)) {
    return fmt::format("running on {}, which still renews its claim: wait for it, or cancel it",
                       m.from);
  }
  Claim fence = held;
  fence.node = "";
  fence.attempt = held.attempt + 1;
  fence.token = random_token();
  fence.reason = fmt::format("being moved from {} to {}", m.from, m.to);
  fence.updated_ms = m.now_ms;
  auto replaced = m.store.replace(keys::claim(job.id), to_json(fence).dump(), read.etag);
  if (!replaced) {
    if (is_code(replaced.error(), Code::kNotFound)) return std::string();  // already gone
    if (is_code(replaced.error(), Code::kConflict)) {
      return std::string("its claim changed while moving: look at it again (gpuq fleet show)");
    }
    return tl::unexpected(replaced.error());
  }
  GPUQ_FLEET_TRY(m.store.remove(keys::claim(job.id)));
  return std::string();
}

// Re-pins the job to `to`: its spec, then its entry under `to`, then the old entry goes.
Status repin(MoveContext& m, FleetJob job, const std::string& old_entry) {
  job.node = m.to;
  auto written = m.store.put(keys::spec(job.id), to_json(job).dump());
  if (!written) return tl::unexpected(written.error());
  GPUQ_FLEET_TRY(detail::create_entry(m.store, job.entry(), job.id));
  return m.store.remove(old_entry);
}

Result<MovedEntry> move_entry(MoveContext& m, const QueueEntry& entry) {
  auto job = read_job(m.store, entry.id);
  if (!job) {
    if (is_code(job.error(), Code::kUnavailable)) return tl::unexpected(job.error());
    return MovedEntry{entry.id, "", MovedEntry::Action::kSkipped, job.error().message};
  }
  auto claim = read_claim(m.store, entry.id);
  if (!claim) return tl::unexpected(claim.error());
  MovedEntry moved{job->id, job->name, MovedEntry::Action::kMoved, ""};
  if (*claim && is_final_state((*claim)->claim.state)) {
    GPUQ_FLEET_TRY(m.store.remove(entry.key));
    return MovedEntry{job->id, job->name, MovedEntry::Action::kCleaned, (*claim)->claim.state};
  }
  if (*claim) {
    const Claim& held = (*claim)->claim;
    if (!held.node.empty() && held.node != m.from) {
      return skipped(*job, fmt::format("running on {}", held.node));
    }
    auto why = take_over(m, *job, **claim);
    if (!why) return tl::unexpected(why.error());
    if (!why->empty()) return skipped(*job, *why);
    moved.action = MovedEntry::Action::kTakenOver;
    moved.detail = fmt::format("attempt {} on {} was fenced off", held.attempt, m.from);
  } else {
    auto cancel = detail::cancel_requested(m.store, job->id);
    if (!cancel) return tl::unexpected(cancel.error());
    if (*cancel) {
      auto ended = detail::end_unclaimed(m.store, *job, "cancelled before any node claimed it",
                                         m.now_ms);
      if (!ended) return tl::unexpected(ended.error());
      if (!*ended) return skipped(*job, "a node claimed it while moving");
      return MovedEntry{job->id, job->name, MovedEntry::Action::kCancelled, "a cancel was asked"};
    }
  }
  GPUQ_FLEET_TRY(repin(m, *job, entry.key));
  return moved;
}

}  // namespace

std::string_view to_string(MovedEntry::Action action) {
  switch (action) {
    case MovedEntry::Action::kMoved: return "moved";
    case MovedEntry::Action::kTakenOver: return "taken_over";
    case MovedEntry::Action::kCleaned: return "cleaned";
    case MovedEntry::Action::kCancelled: return "cancelled";
    case MovedEntry::Action::kSkipped: return "skipped";
  }
  return "skipped";
}

Result<std::vector<MovedEntry>> move_pinned(ObjectStore& store, std::string_view from,
                                            std::string_view to, int64_t now_ms) {
  GPUQ_FLEET_TRY(check_name("node", from));
  GPUQ_FLEET_TRY(check_name("node", to));
  if (from == to) {
    return fail(Code::kInvalidArgument, fmt::format("--from and --to are both {}", from));
  }
  auto target = read_node(store, to);
  if (!target) return tl::unexpected(target.error());
  if (target->stale) {
    return fail(Code::kFailedPrecondition,
                fmt::format("node {} is stale (no heartbeat for {} s): move to a node that is up",
                            to, target->heartbeat_age_ms < 0 ? -1 : target->heartbeat_age_ms / 1000));
  }
  MoveContext m{store, std::string(from), std::string(to)};
  m.now_ms = now_ms;
  Heartbeat defaults;
  m.stale_after_ms = kStaleIntervals * defaults.interval_ms;
  m.from_stale = true;  // a node that never sent a heartbeat holds nothing alive
  if (auto source = read_node(store, from); source) {
    m.from_stale = source->stale;
    if (source->interval_ms > 0) m.stale_after_ms = kStaleIntervals * source->interval_ms;
  } else if (!is_code(source.error(), Code::kNotFound)) {
    return tl::unexpected(source.error());
  }

  std::string prefix = keys::node_queue(from);
  auto listing = store.list(prefix);
  if (!listing) return tl::unexpected(listing.error());
  std::vector<MovedEntry> result;
  bool changed = false;
  for (const auto& info : listing->objects) {
    auto entry = parse_entry(prefix, info.key);
    if (!entry) continue;
    auto moved = move_entry(m, *entry);
    if (!moved) return tl::unexpected(moved.error());
    changed = changed || moved->action != MovedEntry::Action::kSkipped;
    result.push_back(std::move(*moved));
  }
  if (changed) GPUQ_FLEET_TRY(detail::bump_signal(store));
  return result;
}

}  // namespace gpuq::fleet
