// SPDX-License-Identifier: Apache-2.0
#include "runner/container_jobs.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "runner/container_run_spec.h"

namespace gpuq::runner {

Status stop_run_containers(const ContainerRuntime& runtime, const std::string& run_id, Millis grace) {
  auto found = list_run_containers(runtime, run_id);
  if (!found) return tl::unexpected(found.error());
  Status result = ok();
  for (const ContainerRef& ref : *found) {
    auto stopped = stop_container(runtime, ref.name.empty() ? ref.id : ref.name, grace);
    if (!stopped && result) result = stopped;
  }
  return result;
}

ContainerCleanup cleanup_run_containers_within(const ContainerRuntime& runtime,
                                               const std::string& run_id, Millis limit,
                                               Millis poll) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  ContainerCleanup total;
  while (true) {
    auto pass = cleanup_run_containers(runtime, run_id);
    if (pass) {
      total.removed.insert(total.removed.end(), pass->removed.begin(), pass->removed.end());
      total.left = pass->left;
      total.message = pass->message;
      if (total.left.empty()) return total;
    } else {
      total.message = pass.error().message;
    }
    if (std::chrono::steady_clock::now() + poll >= deadline) {
      // Not confirmed: what was left, or (the runtime could not list) the runtime itself.
      if (total.left.empty()) total.left.push_back({"", fmt::format("containers labelled {}", container_label(run_id))});
      return total;
    }
    std::this_thread::sleep_for(poll);
  }
}

std::vector<std::string> job_images(const JobSpec& job) {
  std::vector<std::string> images;
  int count = std::max<int>(1, static_cast<int>(job.steps.size()));
  for (int i = 0; i < count; ++i) {
    std::string image = step_image(job, i);
    if (!image.empty() && std::find(images.begin(), images.end(), image) == images.end()) {
      images.push_back(image);
    }
  }
  return images;
}

Result<std::vector<std::string>> images_to_pull(const ContainerRuntime& runtime,
                                                const std::vector<std::string>& images,
                                                PullPolicy policy) {
  if (policy == PullPolicy::kAlways) return images;
  std::vector<std::string> missing;
  for (const auto& image : images) {
    auto present = image_present(runtime, image);
    if (!present) return tl::unexpected(present.error());
    if (*present) continue;
    if (policy == PullPolicy::kNever) {
      return fail(Code::kFailedPrecondition,
                  fmt::format("image {} is not present and the job's pull policy is never; "
                              "pull or load it ({} pull {}), or submit with --pull missing",
                              image, runtime.binary, image));
    }
    missing.push_back(image);
  }
  return missing;
}

Status pull_images(const ContainerRuntime& runtime, const std::vector<std::string>& images,
                   int log_fd, int cancel_fd) {
  for (const auto& image : images) {
    if (auto st = pull_image(runtime, image, log_fd, kPullTimeout, cancel_fd); !st) return st;
  }
  return ok();
}

}  // namespace gpuq::runner
