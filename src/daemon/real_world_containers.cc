// SPDX-License-Identifier: Apache-2.0
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
#include "os/safe_open.h"
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
      int log_fd = open_pull_log(request);
      auto pulled = runner::pull_images(request.runtime, request.images, log_fd, pull_cancel_.read);
      if (log_fd >= 0) ::close(log_fd);
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

int RealWorld::open_pull_log(const ImagePrep& request) {
  const std::string& path = request.log_path;
  auto not_kept = [&](const std::string& why) {
    std::fprintf(stderr, "gpuq daemon: %s; the pull's progress is not kept\n", why.c_str());
    return -1;
  };
  // A command job has no directory before its first run: the daemon makes it, as its own.
  if (auto made = os::make_dirs(path.substr(0, path.rfind('/')), 0700); !made) return not_kept(made.error().message);
  // On a shared box the job's directory is its user's, who may leave a link (or a hard link)
  // named pull.log there: opened beneath the jobs directory with no link followed, and refused
  // when it has another name elsewhere.
  auto [trusted, relative] = os::split_trusted(path, 2);
  os::BeneathOptions options;
  options.regular_file = true;
  auto fd = os::open_beneath(trusted, relative, O_RDWR | O_APPEND | O_CREAT, 0600, options);
  if (!fd) return not_kept(fmt::format("{}: {}", path, fd.error().message));
  struct stat st {};
  if (::fstat(*fd, &st) != 0 || st.st_nlink != 1) {
    ::close(*fd);
    return not_kept(fmt::format("{}: not a file of its own (it has {} names)", path, st.st_nlink));
  }
  // The user reads their pull's log, as they read their runs' logs.
  if (auto who = submitter_identity(request.user); who && *who && ::fchown(*fd, (*who)->uid, (*who)->gid) != 0) {
    ::close(*fd);
    return not_kept(fmt::format("cannot give {} to {}: {}", path, (*who)->login, std::strerror(errno)));
  }
  return *fd;
}

// Both through the directory's fd, opened without following a link in its place.
Status RealWorld::give_dir(const std::string& path, uid_t uid, gid_t gid) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0 && ::fchown(fd, uid, gid) == 0) {
    ::close(fd);
    return ok();
  }
  int err = errno;
  if (fd >= 0) ::close(fd);
  return fail(Code::kIoError, fmt::format("cannot give {} to {}:{}: {}", path, uid, gid, std::strerror(err)));
}

Status RealWorld::set_dir_mode(const std::string& path, mode_t mode) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0 && ::fchmod(fd, mode) == 0) {
    ::close(fd);
    return ok();
  }
  int err = errno;
  if (fd >= 0) ::close(fd);
  return fail(Code::kIoError, fmt::format("cannot set the mode of {} to {:o}: {}", path, mode, std::strerror(err)));
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
