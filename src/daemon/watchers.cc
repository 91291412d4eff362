// SPDX-License-Identifier: Apache-2.0
#include "daemon/watchers.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/duration.h"

namespace gpuq::daemon {
namespace {

std::string words(int64_t ms) { return format_duration(Millis(std::max<int64_t>(ms, 0))); }

Sighting job_sighting(std::string_view kind, int64_t job_id, int64_t since_ms, int64_t limit_ms,
                      nlohmann::json detail) {
  Sighting s;
  s.key = job_key(kind, job_id);
  s.kind = std::string(kind);
  s.job = job_id;
  s.since_ms = since_ms;
  s.limit_ms = limit_ms;
  detail["limit_ms"] = limit_ms;
  s.detail = std::move(detail);
  return s;
}

void watch_requires(const JobFacts& job, const WatchConfig&, std::vector<Sighting>& out) {
  if (job.running || job.requires_warn_ms <= 0) return;
  if (job.waiting_unknown) {
    Sighting s = job_sighting("job.requires_wait", job.id, 0, job.requires_warn_ms, {});
    s.unknown = true;
    out.push_back(std::move(s));
    return;
  }
  if (!job.waiting) return;  // a since of 0 counts from the first look that saw it
  out.push_back(job_sighting(
      "job.requires_wait", job.id, job.waiting_since_ms, job.requires_warn_ms,
      {{"why", job.waiting_why}, {"condition", job.waiting_why}}));
}

// When the log last grew, or the run's start when it has written nothing yet.
int64_t log_quiet_since(const JobFacts& job) { return std::max(job.log_changed_ms, job.started_ms); }

void watch_quiet(const JobFacts& job, int64_t now_ms, std::vector<Sighting>& out) {
  if (!job.running || job.quiet_ms <= 0) return;
  int64_t since = log_quiet_since(job);
  if (now_ms - since < job.quiet_ms) return;  // the log grew: any episode ends
  out.push_back(job_sighting(
      "job.quiet", job.id, since, job.quiet_ms,
      {{"why", fmt::format("its log has not grown for {} (limit {})", words(now_ms - since),
                           words(job.quiet_ms))}}));
}

void watch_overdue(const JobFacts& job, const WatchConfig& config, int64_t now_ms,
                   std::vector<Sighting>& out) {
  if (!job.running) return;
  int64_t limit = job.warn_after_ms;
  std::string against = fmt::format("--warn-after {}", words(limit));
  if (limit <= 0 && job.estimate_ms > 0 && config.overdue_factor > 0) {
    limit = static_cast<int64_t>(std::llround(static_cast<double>(job.estimate_ms) * config.overdue_factor));
    against = fmt::format("its estimate {} × {}", words(job.estimate_ms), config.overdue_factor);
  }
  if (limit <= 0) return;
  nlohmann::json detail = {
      {"why", fmt::format("running for {}, past {}", words(now_ms - job.started_ms), against)}};
  if (job.estimate_ms > 0) detail["estimate_ms"] = job.estimate_ms;
  out.push_back(job_sighting("job.overdue", job.id, job.started_ms, limit, std::move(detail)));
}

void watch_gpu_idle(const JobFacts& job, const WatchConfig& config, int64_t now_ms,
                    std::vector<Sighting>& out) {
  if (!job.running || job.gpus == 0 || config.gpu_idle_ms <= 0) return;
  if (job.gpu_utilization < 0) {
    Sighting s = job_sighting("job.gpu_idle", job.id, 0, config.gpu_idle_ms, {});
    s.unknown = true;  // no sample yet: an open episode neither ends nor repeats
    out.push_back(std::move(s));
    return;
  }
  if (job.gpu_utilization > config.gpu_idle_utilization) return;
  int64_t since = std::max(log_quiet_since(job), job.gpu_busy_ms);
  if (now_ms - since < config.gpu_idle_ms) return;
  out.push_back(job_sighting(
      "job.gpu_idle", job.id, since, config.gpu_idle_ms,
      {{"why", fmt::format("its GPUs are at {}% (idle at or below {}%) and its log has not grown "
                           "for {}: alive but doing nothing?",
                           job.gpu_utilization, config.gpu_idle_utilization, words(now_ms - since))},
       {"utilization", job.gpu_utilization}}));
}

}  // namespace

std::string job_key(std::string_view kind, int64_t job_id) {
  return fmt::format("{}:{}", kind, job_id);
}

std::vector<Sighting> watch_job(const JobFacts& job, const WatchConfig& config, int64_t now_ms) {
  std::vector<Sighting> out;
  watch_requires(job, config, out);
  watch_quiet(job, now_ms, out);
  watch_overdue(job, config, now_ms, out);
  watch_gpu_idle(job, config, now_ms, out);
  return out;
}

std::vector<Sighting> watch_queue(const QueueFacts& queue, const WatchConfig& config) {
  std::vector<Sighting> out;
  if (config.idle_with_work_ms > 0 && queue.free_gpus > 0 && queue.waiting_jobs > 0 &&
      !queue.draining) {
    nlohmann::json heads = nlohmann::json::array();
    for (const auto& [id, reason] : queue.heads) heads.push_back({{"job", id}, {"reason", reason}});
    Sighting s;
    s.key = s.kind = "queue.idle_with_work";
    s.limit_ms = config.idle_with_work_ms;
    s.detail = {{"free_gpus", queue.free_gpus},
                {"waiting_jobs", queue.waiting_jobs},
                {"heads", std::move(heads)},
                {"why", fmt::format("{} GPU(s) free while {} job(s) wait", queue.free_gpus,
                                    queue.waiting_jobs)}};
    out.push_back(std::move(s));
  }
  if (config.empty_ms > 0 && queue.empty) {
    Sighting s;
    s.key = s.kind = "queue.empty";
    s.limit_ms = config.empty_ms;
    s.detail = {{"why", "nothing is running and nothing is queued"}};
    out.push_back(std::move(s));
  }
  for (const auto& [gpu, since] : queue.attention) {
    Sighting s;
    s.key = "resource.attention:" + gpu;
    s.kind = "resource.attention";
    s.since_ms = since;
    s.reminder_only = true;
    s.detail = {{"gpu", gpu},
                {"why", fmt::format("{} waits for a person: check its processes, then run "
                                    "`gpuq release --attention {}`",
                                    gpu, gpu)}};
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace gpuq::daemon
