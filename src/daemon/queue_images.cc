// SPDX-License-Identifier: Apache-2.0
// A container job's images, made ready before it may take GPUs (docs/containers.md, "Images").
// Once its dependencies and conditions hold, its images are checked off-thread (present, as its
// pull policy says); when one must be pulled the job is handed to the scheduler as its pull: no
// GPUs, the `net` lane when config.toml has one (a lane that excludes `gpu` keeps downloads off
// GPU work), held while the pull runs. Only once its images are present is it scheduled as
// itself, so GPUs never wait for a pull. A check or pull that fails fails the job with the
// runtime's message; the pull's progress goes to the job directory's pull.log.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "daemon/queue.h"
#include "runner/container_jobs.h"

namespace gpuq::daemon {
namespace {

// The lane a pull holds, by config.toml's name for it.
constexpr const char* kPullLane = "net";

}  // namespace

void Queue::check_images(ActiveJob& job) {
  ready_index_.mark(job.id);  // checking, or (the job could not be read) to be checked again
  auto loaded = load_job(job.id, false);
  if (!loaded) return;
  auto runtime = world_.container_runtime(config_.containers);
  if (!runtime) {
    fail_for_images(job.id, fmt::format("no container runtime for its image: {}", runtime.error().message));
    return;
  }
  ImagePrep request;
  request.job_id = job.id;
  request.seq = image_requests_[job.id] = ++image_request_seq_;
  request.runtime = std::move(*runtime);
  request.images = runner::job_images(loaded->spec);
  request.policy = loaded->spec.pull;
  job.images = ImageState::kChecking;
  image_texts_[job.id] = fmt::format("checking whether image {} is present", fmt::join(request.images, ", "));
  world_.prepare_images(std::move(request), [this](ImagePrepResult result) { on_images_checked(result); });
}

void Queue::on_images_checked(const ImagePrepResult& result) {
  auto it = active_.find(result.job_id);
  if (it == active_.end() || stopping_) return;
  ActiveJob& job = it->second;
  ready_index_.mark(job.id);
  if (!latest_image_request(job, result.seq, ImageState::kChecking)) return;
  if (!result.ok) {
    fail_for_images(job.id, result.error);
    return;
  }
  if (result.to_pull.empty()) {
    job.images = ImageState::kReady;
    image_texts_.erase(job.id);
  } else {
    job.images = ImageState::kToPull;
    // Kept for the pull; the wait text is the scheduler's while the pull waits for its lane.
    pulls_to_begin_[job.id] = result.to_pull;
  }
  request_pass();
}

ActiveJob Queue::as_pull(const ActiveJob& job) const {
  ActiveJob pull = job;
  pull.gpus = 0;
  pull.gpu_mem_mib = 0;
  pull.share = false;
  pull.reservation = -1;
  pull.estimate_ms = 0;
  pull.timeout_ms = 0;
  pull.lanes.clear();
  for (size_t i = 0; i < config_.lanes.size(); ++i) {
    if (config_.lanes[i].name == kPullLane) pull.lanes.push_back(static_cast<int>(i));
  }
  return pull;
}

bool Queue::latest_image_request(ActiveJob& job, uint64_t seq, ImageState expected) {
  auto latest = image_requests_.find(job.id);
  if (latest == image_requests_.end() || latest->second != seq || job.images != expected) {
    return false;  // an earlier request's answer: the job has moved on
  }
  if (job.state != JobState::kPending || job.cancel_requested) {
    job.images = ImageState::kUnchecked;  // checked again if it becomes pending
    return false;
  }
  return true;
}

void Queue::begin_pull(ActiveJob& job) {
  // A pull of an earlier life of the job (cancelled, then retried) still runs: this one begins
  // once it ends, and it holds no lane meanwhile.
  if (pulls_.count(job.id)) return;
  auto images = pulls_to_begin_.find(job.id);
  auto runtime = world_.container_runtime(config_.containers);
  if (images == pulls_to_begin_.end() || !runtime) {
    job.images = ImageState::kUnchecked;  // checked again from the start
    ready_index_.mark(job.id);
    return;
  }
  Pull pull;
  pull.seq = image_requests_[job.id] = ++image_request_seq_;
  pull.lanes = as_pull(job).lanes;
  pull.images = std::move(images->second);
  pull.started_ms = world_.now_ms();
  pulls_to_begin_.erase(images);
  std::string log = options_.layout.job_dir(job.id) + "/pull.log";
  auto committed = commit([&] {
    return add_event("job.image_pulling", job.id, std::nullopt, {{"images", pull.images}, {"log", log}});
  });
  if (!committed) {
    job.images = ImageState::kUnchecked;
    ready_index_.mark(job.id);
    return;
  }
  hold_slots(job.id, {}, pull.lanes);
  job.images = ImageState::kPulling;
  image_texts_[job.id] = fmt::format("pulling image {} ({})", fmt::join(pull.images, ", "), log);
  ready_index_.set_not_ready(job.id);
  ready_index_.mark(job.id);
  ImagePrep request;
  request.job_id = job.id;
  request.runtime = std::move(*runtime);
  request.seq = pull.seq;
  request.images = pull.images;
  request.pull = true;
  request.log_path = log;
  if (job.owner >= 0) request.user = users_.user_of(job.owner);
  pulls_[job.id] = std::move(pull);
  world_.prepare_images(std::move(request), [this](ImagePrepResult result) { on_pulled(result); });
}

void Queue::on_pulled(const ImagePrepResult& result) {
  auto pull = pulls_.find(result.job_id);
  if (pull == pulls_.end() || stopping_) return;
  Pull done = std::move(pull->second);
  pulls_.erase(pull);
  free_slots(result.job_id, {}, done.lanes);
  request_pass();
  auto it = active_.find(result.job_id);
  if (it == active_.end()) return;  // cancelled meanwhile
  ActiveJob& job = it->second;
  ready_index_.mark(job.id);
  if (!latest_image_request(job, done.seq, ImageState::kPulling)) return;
  if (!result.ok) {
    fail_for_images(job.id, result.error);
    return;
  }
  int64_t took = world_.now_ms() - done.started_ms;
  (void)commit([&] {
    return add_event("job.image_pulled", job.id, std::nullopt, {{"images", done.images}, {"duration_ms", took}});
  });
  job.images = ImageState::kReady;
  image_texts_.erase(job.id);
}

void Queue::fail_for_images(int64_t job_id, const std::string& why) {
  auto it = active_.find(job_id);
  if (it == active_.end() || it->second.state != JobState::kPending) return;
  std::string reason = fmt::format("its image could not be made ready: {}", why);
  auto committed = commit([&]() -> Status {
    if (auto st = set_state(job_id, JobState::kPending, JobState::kFailed, reason); !st) return st;
    return add_event("job.failed", job_id, std::nullopt, {{"reason", reason}});
  });
  if (!committed) {
    it->second.images = ImageState::kUnchecked;  // tried again once the store works
    return;
  }
  image_texts_.erase(job_id);
  pulls_to_begin_.erase(job_id);
  note_finished(job_id, JobState::kFailed);
}

}  // namespace gpuq::daemon
