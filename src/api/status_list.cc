// SPDX-License-Identifier: Apache-2.0
// The jobs of GET /v1/status: every unfinished job and the latest finished ones, or, with
// ?pending_limit=N&pending_offset=M, the unfinished jobs that are not pending (with
// &held_limit=H, the oldest H held and H blocked ones) and one page of the pending ones in
// serving order (docs/api.md, "Status"). Each pending job carries its ETA
// and its serving position (1-based, the order the scheduler considers pending jobs in).
#include <algorithm>
#include <iterator>
#include <limits>
#include <malloc.h>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "api/bodies.h"
#include "api/server.h"
#include "base/time.h"
#include "model/json.h"

namespace gpuq::api {
namespace {

// Serving order, as sched::scheduling_order sorts pending jobs: priority (unless FIFO), then
// queue order, then id.
bool serves_before(const Job& a, const Job& b, bool fifo) {
  if (!fifo && a.spec.priority != b.spec.priority) return a.spec.priority < b.spec.priority;
  return a.queue_order != b.queue_order ? a.queue_order < b.queue_order : a.id < b.id;
}

// The serving positions of the pending jobs among `jobs` in the whole queue (a user's, who
// are not a range of it), found by the store.
Result<std::unordered_map<int64_t, int64_t>> positions_in_queue(store::Store& store,
                                                                const std::vector<Job>& jobs, bool fifo) {
  std::unordered_set<int64_t> pending;
  for (const Job& job : jobs) {
    if (job.state == JobState::kPending) pending.insert(job.id);
  }
  return store.serving_positions(pending, fifo);
}

// An unfinished array in GET /v1/status: the Array, its counts by state and the range of its
// elements' ids.
nlohmann::json array_summary_json(const store::Store::ArraySummary& summary) {
  nlohmann::json j = array_to_json(summary.array);
  nlohmann::json counts = nlohmann::json::object();
  for (const auto& [state, n] : summary.counts) counts[std::string(to_string(state))] = n;
  j["counts"] = std::move(counts);
  j["first_job"] = summary.first_job;
  j["last_job"] = summary.last_job;
  return j;
}

// The caps of arrays (docs/sweeps.md) as the daemon applies them: a lane of each capped array's
// own ("NAME%MAX"), which each of its elements holds. Returns `base` with those lanes added.
daemon::Config with_array_caps(const daemon::Config& base, std::vector<Job>& jobs,
                               const std::vector<JobArray>& arrays) {
  daemon::Config config = base;
  std::unordered_map<int64_t, std::string> lane_of;
  for (const JobArray& array : arrays) {
    if (array.max_running <= 0) continue;
    std::string lane = fmt::format("{}%{}", array.name, array.max_running);
    config.lanes.push_back({lane, array.max_running, {}});
    lane_of[array.id] = std::move(lane);
  }
  if (lane_of.empty()) return config;
  for (Job& job : jobs) {
    if (auto it = lane_of.find(job.array_id); it != lane_of.end()) job.spec.lanes.push_back(it->second);
  }
  return config;
}

}  // namespace

Result<daemon::Config> Server::eta_config(std::vector<Job>& jobs) {
  auto arrays = store_->active_arrays();
  if (!arrays) return tl::unexpected(arrays.error());
  return with_array_caps(context_.queue.config(), jobs, *arrays);
}

Result<const EtaCache::Etas*> Server::current_etas(int64_t now_ms) {
  auto seq = store_->last_seq();
  if (!seq) return tl::unexpected(seq.error());
  const auto& inventory = context_.queue.inventory();
  if (etas_.fresh(now_ms, *seq)) return &etas_.get({}, inventory, context_.queue.config(), now_ms, *seq);
  // A queue too deep to simulate is not loaded just to learn that (a page must stay cheap):
  // the count the last pass published, not an index count of a million entries. A pass behind
  // a change at most loads a queue that just grew too deep, or says "no ETAs" a pass longer.
  size_t active = context_.queue.waits()->active_jobs;
  if (active > EtaCache::kMaxJobs) {
    return &etas_.none(fmt::format("no ETAs: more than {} active jobs", EtaCache::kMaxJobs), now_ms, *seq);
  }
  // A waiting job without an estimate or a timeout means no ETAs (EtaCache::compute): found
  // in the specs' text, without loading every unfinished job.
  auto unbounded = store_->unbounded_job();
  if (!unbounded) return tl::unexpected(unbounded.error());
  if (*unbounded) {
    return &etas_.none(fmt::format("no ETAs: job {} has no estimate (--est) or timeout", **unbounded),
                       now_ms, *seq, true);
  }
  const EtaCache::Etas* etas = nullptr;
  size_t loaded = 0;
  {
    auto jobs = store_->eta_jobs();
    if (!jobs) return tl::unexpected(jobs.error());
    loaded = jobs->size();
    auto config = eta_config(*jobs);
    if (!config) return tl::unexpected(config.error());
    etas = &etas_.get(*jobs, inventory, *config, now_ms, *seq);
  }
  // Thousands of loaded jobs leave megabytes of freed specs in malloc's arenas: give them back.
  if (loaded > 1000) ::malloc_trim(0);
  return etas;
}

Result<const EtaCache::Etas*> Server::etas_for(const std::vector<Job>& listed, int64_t now_ms) {
  // Only a pending job shows an ETA: a list without one (the elements of a sweep left out of
  // `gpuq status`, and nothing else waiting) is answered without a simulation.
  static const EtaCache::Etas kNone;
  bool pending = std::any_of(listed.begin(), listed.end(),
                             [](const Job& job) { return job.state == JobState::kPending; });
  if (!pending) return &kNone;
  return current_etas(now_ms);
}

std::string Server::array_owner(int64_t array_id) {
  auto elements = store_->array_elements(array_id);
  if (!elements || elements->empty()) return "";
  auto job = store_->find_job(elements->front(), false);  // an array's elements share a submitter
  return job && *job ? (*job)->spec.user : "";
}

Result<Server::StatusList> Server::status_list(const Target& target, std::optional<size_t> finished) {
  auto page = decode_pending_page(target);
  if (!page) return tl::unexpected(page.error());
  bool fifo = daemon::policy_of(context_.queue.config()) == sched::Policy::kFifo;
  int64_t now = wall_now_ms();
  StatusList out;
  auto summaries = store_->active_array_summaries();
  if (!summaries) return tl::unexpected(summaries.error());
  // ?user=NAME (gpuq status --user, --mine): only that user's jobs and arrays. With
  // &user_page=1 and a page, the page and its totals are that user's too.
  const std::string only_user = target.param("user");
  const std::string user_page_param = target.param("user_page");
  if (!user_page_param.empty() && user_page_param != "0" && user_page_param != "1") {
    return invalid_argument(fmt::format("bad user_page '{}': use 1 (or 0)", user_page_param));
  }
  const bool user_page = user_page_param == "1";
  if (user_page && (only_user.empty() || !*page)) {
    return invalid_argument("user_page=1 needs user=NAME and pending_limit (the page's size)");
  }
  out.arrays = nlohmann::json::array();
  for (const auto& summary : *summaries) {
    if (!only_user.empty() && array_owner(summary.array.id) != only_user) continue;
    out.arrays.push_back(array_summary_json(summary));
  }
  // ?arrays=collapse: an unfinished array's elements are left out (its summary in "arrays"
  // stands for them), so a sweep of a million costs a status what one job does.
  std::vector<int64_t> collapsed;
  for (const auto& summary : *summaries) collapsed.push_back(summary.array.id);
  const bool collapse = target.param("arrays") == "collapse";
  std::vector<Job> listed;
  std::unordered_map<int64_t, int64_t> positions;  // pending job → serving position
  const EtaCache::Etas* etas = nullptr;
  if (*page) {
    size_t finished_limit = finished ? *finished : static_cast<size_t>(std::numeric_limits<int64_t>::max());
    auto q = store_->queue_page((*page)->offset, (*page)->limit, fifo, finished_limit,
                                collapse ? &collapsed : nullptr, (*page)->held_limit,
                                user_page ? &only_user : nullptr);
    if (!q) return tl::unexpected(q.error());
    attach_reasons(q->others);
    attach_reasons(q->pending);
    // Serving positions count every pending job: none while elements are left out. A user's
    // page is not a range of the whole queue: the store finds where its jobs stand, counting
    // the elements too, so those are given even while elements are left out.
    if (user_page) {
      auto found = positions_in_queue(*store_, q->pending, fifo);
      if (!found) return tl::unexpected(found.error());
      positions = std::move(*found);
    } else if (!collapse || collapsed.empty()) {
      for (size_t i = 0; i < q->pending.size(); ++i) {
        positions[q->pending[i].id] = static_cast<int64_t>((*page)->offset + i + 1);
      }
    }
    auto current = etas_for(q->pending, now);
    if (!current) return tl::unexpected(current.error());
    etas = *current;
    out.pending_total = q->pending_total;
    if ((*page)->held_limit) {
      out.held_total = q->held_total;
      out.blocked_total = q->blocked_total;
    }
    out.finished_total = q->finished_total;
    // The others by id, the page in serving order, then the finished jobs by id.
    listed = std::move(q->others);
    std::move(q->pending.begin(), q->pending.end(), std::back_inserter(listed));
    std::move(q->finished.begin(), q->finished.end(), std::back_inserter(listed));
  } else {
    // One user's jobs are chosen by the store: a user's view beside a million queued jobs of
    // others reads an index, not the million.
    auto jobs = store_->status_jobs(finished, collapse ? &collapsed : nullptr,
                                    only_user.empty() ? nullptr : &only_user);
    if (!jobs) return tl::unexpected(jobs.error());
    attach_reasons(jobs->active);
    // The ETAs come from the whole queue (current_etas reads only what they need, and counts
    // arrays' caps), whatever the list shows.
    auto current = etas_for(jobs->active, now);
    if (!current) return tl::unexpected(current.error());
    etas = *current;
    // Serving positions count every pending job: none while elements are left out. The store
    // finds those of one user's jobs (counting the elements, so even while they are left out);
    // the rest are all listed here.
    if (!only_user.empty()) {
      auto found = positions_in_queue(*store_, jobs->active, fifo);
      if (!found) return tl::unexpected(found.error());
      positions = std::move(*found);
    } else if (!collapse || collapsed.empty()) {
      std::vector<const Job*> pending;
      for (const Job& job : jobs->active) {
        if (job.state == JobState::kPending) pending.push_back(&job);
      }
      std::sort(pending.begin(), pending.end(),
                [fifo](const Job* a, const Job* b) { return serves_before(*a, *b, fifo); });
      for (size_t i = 0; i < pending.size(); ++i) positions[pending[i]->id] = static_cast<int64_t>(i + 1);
    }
    out.finished_total = jobs->finished_total;
    listed.reserve(jobs->active.size() + jobs->finished.size());
    std::merge(std::make_move_iterator(jobs->active.begin()), std::make_move_iterator(jobs->active.end()),
               std::make_move_iterator(jobs->finished.begin()), std::make_move_iterator(jobs->finished.end()),
               std::back_inserter(listed), [](const Job& a, const Job& b) { return a.id < b.id; });
  }
  out.eta_note = etas->note;
  out.jobs = nlohmann::json::array();
  for (const Job& job : listed) {
    if (!only_user.empty() && job.spec.user != only_user) continue;
    nlohmann::json j = job_to_json(job);
    if (job.state == JobState::kPending) {
      auto it = etas->start_ms.find(job.id);
      j["eta"] = it == etas->start_ms.end() ? nlohmann::json(nullptr)
                                            : nlohmann::json(format_rfc3339(std::max(now, it->second)));
      auto position = positions.find(job.id);
      j["serving_position"] = position == positions.end() ? nlohmann::json(nullptr) : nlohmann::json(position->second);
    }
    out.jobs.push_back(std::move(j));
  }
  return out;
}

}  // namespace gpuq::api
