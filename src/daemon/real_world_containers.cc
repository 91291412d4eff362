// RealWorld's container work (world.h, "containers"): the runtime found on the daemon's PATH;
// stops, image checks, cleanups by label and pulls (one at a time) each on a worker of its own,
// so none waits behind another kind; each result posted back to the actor.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "daemon/real_world.h"
#include "os/process.h"
#include "runner/container_jobs.h"

namespace gpuq::daemon {

namespace asio = boost::asio;

RealWorld::CancelPipe::CancelPipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return;
  read = fds[0];
  write = fds[1];
}

RealWorld::CancelPipe::~CancelPipe() {
  if (read >= 0) ::close(read);
  if (write >= 0) ::close(write);
}

Result<runner::ContainerRuntime> RealWorld::container_runtime(const ContainersConfig& config) {
  const char* path = std::getenv("PATH");
  return runner::find_container_runtime(config.runtime, config.extra_args,
                                        path ? path : "/usr/local/bin:/usr/bin:/bin");
}

void RealWorld::stop_containers(runner::ContainerRuntime runtime, std::string run_id,
                                int64_t grace_ms) {
  container_stop_worker_.post([runtime = std::move(runtime), run_id = std::move(run_id), grace_ms] {
    auto stopped = runner::stop_run_containers(runtime, run_id, Millis(grace_ms));
    if (!stopped) {
      std::fprintf(stderr, "gpuq daemon: stopping the containers of run %s: %s (cleanup removes them)\n",
                   run_id.c_str(), stopped.error().message.c_str());
    }
  });
}

void RealWorld::prepare_images(ImagePrep request, std::function<void(ImagePrepResult)> done) {
  std::weak_ptr<bool> alive = alive_;
  auto work = [this, alive, request = std::move(request), done = std::move(done)]() mutable {
    ImagePrepResult result;
    result.job_id = request.job_id;
    result.seq = request.seq;
    if (request.pull) {
      std::string dir = request.log_path.substr(0, request.log_path.rfind('/'));
      if (auto made = os::make_dirs(dir, 0700); !made) {
        std::fprintf(stderr, "gpuq daemon: %s; the pull's progress is not kept\n", made.error().message.c_str());
        request.log_path.clear();
      }
      auto pulled = runner::pull_images(request.runtime, request.images, request.log_path,
                                        pull_cancel_.read);
      result.ok = pulled.has_value();
      if (!pulled) result.error = pulled.error().message;
    } else {
      auto wanted = runner::images_to_pull(request.runtime, request.images, request.policy);
      result.ok = wanted.has_value();
      if (wanted) result.to_pull = std::move(*wanted);
      else result.error = wanted.error().message;
    }
    asio::post(actor_, [alive, done, result = std::move(result)] {
      if (auto a = alive.lock(); a && *a) done(result);
    });
  };
  if (request.pull) {
    pull_worker_.post(std::move(work));
  } else {
    image_check_worker_.post(std::move(work));
  }
}

Status RealWorld::give_dir(const std::string& path, uid_t uid, gid_t gid) {
  if (::chown(path.c_str(), uid, gid) == 0) return ok();
  return fail(Code::kIoError, fmt::format("cannot give {} to {}:{}: {}", path, uid, gid,
                                          std::strerror(errno)));
}

Status RealWorld::set_dir_mode(const std::string& path, mode_t mode) {
  if (::chmod(path.c_str(), mode) == 0) return ok();
  return fail(Code::kIoError, fmt::format("cannot set the mode of {} to {:o}: {}", path, mode,
                                          std::strerror(errno)));
}

void RealWorld::add_container_cleanup(const runner::ContainerRuntime& runtime,
                                      const std::string& run_id, runner::CleanupOutcome& outcome) {
  auto cleanup = runner::cleanup_run_containers_within(runtime, run_id,
                                                       Millis(options_.cleanup.limit_ms),
                                                       Millis(std::max<int64_t>(options_.cleanup.poll_ms, 200)));
  for (const auto& ref : cleanup.removed) outcome.containers_removed.push_back(ref.name.empty() ? ref.id : ref.name);
  for (const auto& ref : cleanup.left) outcome.containers_left.push_back(ref.name.empty() ? ref.id : ref.name);
  outcome.containers_message = cleanup.message;
  if (!cleanup.left.empty()) outcome.confirmed = false;
}

}  // namespace gpuq::daemon
