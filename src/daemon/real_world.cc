// SPDX-License-Identifier: Apache-2.0
#include "daemon/real_world.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fmt/format.h>

#include "base/time.h"
#include "os/file_tree.h"
#include "os/process.h"
#include "os/safe_open.h"
#include "os/unique_fd.h"
#include "runner/launcher.h"
#include "runner/run_env.h"
#include "runner/session_sweep.h"

namespace gpuq::daemon {
namespace {


namespace asio = boost::asio;

// The longest single wait of a timer: a far-off instant is reached in steps, so that neither
// the conversion to the steady clock's nanoseconds overflows nor a jump of the wall clock
// makes the timer fire early (each step re-reads the wall clock).
constexpr int64_t kMaxTimerStepMs = 6 * 3600 * 1000;

class RealTimer : public Timer {
 public:
  explicit RealTimer(asio::io_context& ioc) : state_(std::make_shared<State>(ioc)) {}
  ~RealTimer() override { state_->timer.cancel(); }

  void arm(int64_t at_ms, std::function<void()> fire) override {
    state_->at_ms = at_ms;
    state_->fire = std::move(fire);
    ++state_->generation;
    schedule(state_);
  }
  void cancel() override {
    ++state_->generation;
    state_->fire = nullptr;
    state_->timer.cancel();
  }

 private:
  struct State {
    explicit State(asio::io_context& ioc) : timer(ioc) {}
    asio::steady_timer timer;
    int64_t at_ms = 0;
    uint64_t generation = 0;
    std::function<void()> fire;
  };

  static void schedule(const std::shared_ptr<State>& state) {
    int64_t delay = saturating_add(state->at_ms, -wall_now_ms());
    delay = std::clamp<int64_t>(delay, 0, kMaxTimerStepMs);
    state->timer.expires_after(std::chrono::milliseconds(delay));
    std::weak_ptr<State> weak = state;
    uint64_t generation = state->generation;
    state->timer.async_wait([weak, generation](const boost::system::error_code& ec) {
      auto s = weak.lock();
      if (ec || !s || s->generation != generation) return;
      if (wall_now_ms() < s->at_ms) return schedule(s);  // a step of a far-off wait
      auto fire = std::move(s->fire);
      s->fire = nullptr;
      if (fire) fire();
    });
  }

  std::shared_ptr<State> state_;
};

// A shim known by a pidfd: launched now (with its go pipe, until released) or adopted.
class RealShim : public ShimProcess {
 public:
  RealShim(asio::io_context& ioc, pid_t pid, uint64_t ticks, int pidfd,
           std::optional<runner::LaunchedShim> launched)
      : pid_(pid),
        ticks_(ticks),
        watch_(std::make_shared<asio::posix::stream_descriptor>(ioc, pidfd)),
        launched_(std::move(launched)) {}

  ~RealShim() override {
    if (!launched_) {
      watch_->cancel();
      return;
    }
    // Never released: dropping the go pipe makes the shim exit at once without running the
    // job. Reap it when it does (a no-op unless it is our own child, an exec'd shim).
    launched_.reset();
    pid_t pid = pid_;
    auto watch = watch_;
    watch->cancel();
    watch->async_wait(asio::posix::stream_descriptor::wait_read,
                      [watch, pid](const boost::system::error_code&) { ::waitpid(pid, nullptr, WNOHANG); });
  }

  pid_t pid() const override { return pid_; }
  uint64_t start_ticks() const override { return ticks_; }

  Status release() override {
    if (!launched_) return ok();
    auto released = launched_->release();
    launched_.reset();
    return released;
  }

  os::SignalResult signal(int sig) override {
    auto sent = os::signal_pidfd(watch_->native_handle(), sig);
    if (sent) return os::SignalResult::kSent;
    return sent.error().code == Code::kFailedPrecondition ? os::SignalResult::kDenied
                                                          : os::SignalResult::kGone;
  }

  void on_exit(std::function<void()> exited) override {
    pid_t pid = pid_;
    watch_->async_wait(asio::posix::stream_descriptor::wait_read,
                       [pid, exited = std::move(exited)](const boost::system::error_code& ec) {
                         if (ec == asio::error::operation_aborted) return;
                         ::waitpid(pid, nullptr, WNOHANG);  // reap it when it is our child
                         exited();
                       });
  }

 private:
  pid_t pid_;
  uint64_t ticks_;
  std::shared_ptr<asio::posix::stream_descriptor> watch_;
  std::optional<runner::LaunchedShim> launched_;
};

}  // namespace

RealWorld::RealWorld(asio::io_context& actor, store::Store& store, RealWorldOptions options)
    : actor_(actor),
      store_(store),
      options_(std::move(options)),
      processes_(os::make_linux_process_table()),
      checker_(actor, options_.condition_threads),
      file_watcher_(actor),
      cleaner_(os::make_linux_process_table(), options_.cleanup) {
  // Shims that are exec'd (gpuq-shim, or gpuqd alone when no spawner could start) are started
  // a run ahead (runner/spare_shim.h); a spawner's are forked from its small process already.
  if (!options_.spawner && options_.spare_shims > 0 && !options_.shim_executable.empty()) {
    spare_shim_ = std::make_unique<runner::SpareShim>(
        options_.shim_executable, options_.spare_max_age_ms, options_.spare_shims);
  }
  if (options_.containment.kind != "cgroup") return;
  auto started = runner::CgroupCleaner::start(*cgroup_files_, options_.cleanup);
  if (!started) {
    options_.containment = {"marker", "", "no cgroup cleaner: " + started.error().message};
    return;
  }
  cgroup_cleaner_ = std::move(*started);
  cgroups_ = std::make_unique<runner::RunCgroups>(*cgroup_files_, options_.containment.root);
}

RealWorld::~RealWorld() {
  *alive_ = false;
  cgroup_cleaner_.reset();
  // A pull under way ends now; the read end stays open until the pull worker has stopped.
  if (pull_cancel_.write >= 0) {
    char byte = 1;
    (void)!::write(pull_cancel_.write, &byte, 1);
  }
}

int64_t RealWorld::now_ms() { return wall_now_ms(); }

std::unique_ptr<Timer> RealWorld::make_timer() { return std::make_unique<RealTimer>(actor_); }

void RealWorld::post(std::function<void()> fn) { asio::post(actor_, std::move(fn)); }

Status RealWorld::commit(const std::function<Status()>& writes) { return store_.transaction(writes); }

Status RealWorld::create_run_dir(const std::string& run_dir, const runner::RunSpec& given) {
  // run.json carries the job's user's groups: the shim (gpuq-shim, a static binary) looks up
  // nothing itself. A run that has them already (its containers needed them) keeps them.
  std::optional<runner::RunSpec> with_groups;
  if (given.run_as && given.run_as->groups.empty()) {
    auto groups = os::groups_of(given.run_as->login, given.run_as->gid);
    if (!groups) return tl::unexpected(groups.error());
    with_groups = given;
    with_groups->run_as->groups = std::move(*groups);
  }
  const runner::RunSpec& spec = with_groups ? *with_groups : given;
  std::string parent = run_dir.substr(0, run_dir.rfind('/'));
  if (auto made = os::make_dirs(parent, 0700); !made) return made;
  // The job directory may be its user's already (an earlier run): the run directory is made and
  // filled through fds with no link on the way, and only a directory made now is used.
  auto [jobs, job_name] = os::split_trusted(parent, 1);
  auto job_fd = os::open_beneath(jobs, job_name, O_RDONLY | O_DIRECTORY);
  if (!job_fd) return tl::unexpected(job_fd.error());
  os::UniqueFd job(*job_fd);
  std::string run_name = run_dir.substr(run_dir.rfind('/') + 1);
  if (::mkdirat(job.get(), run_name.c_str(), 0700) != 0) {
    if (errno == EEXIST) return fail(Code::kConflict, run_dir + " exists already");
    return errno_error("mkdir " + run_dir);
  }
  os::BeneathOptions mine;
  mine.owner = ::geteuid();
  auto run_fd = os::open_beneath_at(job.get(), run_name, O_RDONLY | O_DIRECTORY, 0, mine);
  if (!run_fd) return tl::unexpected(run_fd.error());
  os::UniqueFd run(*run_fd);
  if (auto written = runner::write_run_spec_at(run.get(), spec); !written) return written;
  // The job's checkpoints go to the job directory: it is the user's. (The run directory is given
  // by the shim, once it has opened the log there.)
  if (spec.run_as && ::fchown(job.get(), spec.run_as->uid, spec.run_as->gid) != 0) {
    return errno_error(fmt::format("cannot give {} to {}", parent, spec.run_as->login));
  }
  return ok();
}

Result<std::optional<os::UserIdentity>> RealWorld::submitter_identity(const std::string& login) {
  if (!os::runs_as_submitter(::geteuid(), login)) return std::nullopt;
  auto who = os::passwd_entry(login);
  if (!who && who.error().code == Code::kNotFound) {
    return fail(Code::kNotFound, fmt::format("the job's user {} is not a user of this machine (any more): "
                                             "the job runs only as its submitter, never as root", login));
  }
  if (!who) return tl::unexpected(who.error());
  if (who->uid == 0) return std::nullopt;  // another name of root's
  return std::optional<os::UserIdentity>(std::move(*who));
}

Result<std::unique_ptr<ShimProcess>> RealWorld::launch_shim(const std::string& run_dir,
                                                            const std::string& run_id,
                                                            const std::string& cgroup_user) {
  std::unique_ptr<ShimProcess> shim = take_spare_shim(run_dir);
  if (!shim) {
    auto launched = options_.spawner ? options_.spawner->launch(run_dir)
                                     : runner::launch_shim(options_.shim_executable, run_dir);
    if (!launched) return tl::unexpected(launched.error());
    pid_t pid = launched->pid();
    uint64_t ticks = launched->start_ticks();
    auto pidfd = os::open_pidfd_checked(pid, ticks);
    if (!pidfd) {
      { runner::LaunchedShim dropped = std::move(*launched); }  // its go pipe closes: the shim exits
      ::waitpid(pid, nullptr, 0);  // a gpuq-shim is this process's child: reaped (a no-op otherwise)
      return tl::unexpected(pidfd.error());
    }
    // Watched from here on: a shim given up below is reaped when it exits (~RealShim).
    shim = std::make_unique<RealShim>(actor_, pid, ticks, *pidfd, std::move(*launched));
  }
  refill_spare_shim_later();
  // Placed while it waits for its go byte: everything the job starts is born in its cgroup.
  if (cgroups_) {
    if (auto placed = cgroups_->place(run_id, shim->pid(), cgroup_user); !placed) {
      return tl::unexpected(placed.error());
    }
  }
  return shim;
}

std::unique_ptr<ShimProcess> RealWorld::take_spare_shim(const std::string& run_dir) {
  if (!spare_shim_) return nullptr;
  auto taken = spare_shim_->take(run_dir);
  // Spares passed over (too old, or dead) are killed and reaped on the spares' thread, not on
  // the start's path.
  drop_retired_spares();
  if (!taken) return nullptr;
  pid_t pid = taken->launched.pid();
  uint64_t ticks = taken->launched.start_ticks();
  return std::make_unique<RealShim>(actor_, pid, ticks, taken->pidfd, std::move(taken->launched));
}

void RealWorld::drop_retired_spares() {
  if (auto retired = spare_shim_->retired(); !retired.empty()) {
    auto dropped = std::make_shared<std::vector<runner::SpareShim::Started>>(std::move(retired));
    spare_worker_.post([dropped] { dropped->clear(); });
  }
}

int64_t RealWorld::spare_renewal_lead_ms() const { return options_.spare_max_age_ms / 4; }

void RealWorld::arm_spare_renewal() {
  auto until = spare_shim_->ms_until_aging(spare_renewal_lead_ms());
  if (until) {
    arm_spare_renewal_in(*until);
  } else {
    spare_renewal_.cancel();
  }
}

void RealWorld::arm_spare_renewal_in(int64_t ms) {
  // A maximum age this short (tests only) would renew spares without pause: none are.
  if (options_.spare_max_age_ms < kShortestRenewedSpareAgeMs) return;
  // On the steady clock, as the spares' ages are (boot clock): a step of the wall clock moves
  // neither.
  spare_renewal_.expires_after(std::chrono::milliseconds(ms));
  std::weak_ptr<bool> alive = alive_;
  spare_renewal_.async_wait([this, alive](const boost::system::error_code& error) {
    auto live = alive.lock();
    if (error || !live || !*live) return;  // re-armed, cancelled, or the world going away
    renew_spares();
  });
}

void RealWorld::renew_spares() {
  if (spare_refills_in_flight_ > 0) return;  // its arrival arms the timer again
  auto until = spare_shim_->ms_until_aging(spare_renewal_lead_ms());
  if (until && *until > 0) return arm_spare_renewal_in(*until);  // the oldest was taken
  size_t young = spare_shim_->young(spare_renewal_lead_ms());
  if (young >= kSparesRenewedWhileIdle) {  // enough young ones wait: the aging ones just go
    spare_shim_->retire_aging(spare_renewal_lead_ms());
    drop_retired_spares();
    young = spare_shim_->waiting();  // those it kept (one may have aged or died since)
  }
  // The replacements first: aging spares are set aside when they arrive (keep_spare), so a
  // start meanwhile still takes one of them. None waiting (a failed spawn's retry): started.
  for (size_t i = young; i < kSparesRenewedWhileIdle; ++i) start_spare_later();
  if (spare_refills_in_flight_ == 0) arm_spare_renewal();
}

void RealWorld::keep_spare(Result<runner::SpareShim::Started>& started) {
  --spare_refills_in_flight_;
  // None could be started (no processes left, the binary gone): a start spawns its own shim,
  // and that spawn's error is the start's, reported as every failed start is. The renewal is
  // tried again a lead later, not at once.
  if (!started) return arm_spare_renewal_in(spare_renewal_lead_ms());
  // A younger spare is here: those about to age out go (the capacity counts them), once no
  // other refill is on its way to take their place too.
  if (spare_refills_in_flight_ == 0) {
    spare_shim_->retire_aging(spare_renewal_lead_ms());
    drop_retired_spares();
  }
  spare_shim_->keep(std::move(*started));
  arm_spare_renewal();
}

void RealWorld::refill_spare_shim_later(size_t target) {
  if (!spare_shim_) return;
  target = std::min(target, spare_shim_->capacity());
  while (spare_shim_->waiting() + spare_refills_in_flight_ < target) start_spare_later();
}

void RealWorld::start_spare_later() {
  ++spare_refills_in_flight_;
  std::weak_ptr<bool> alive = alive_;
  // Each spawn waits for gpuq-shim's exec (posix_spawn's vfork), 0.6-6 ms: on the spares' own
  // thread, so that the actor answers and starts meanwhile. A start that finds none waiting
  // spawns its own shim, as with no spares.
  spare_worker_.post([this, alive, executable = spare_shim_->executable()] {
    auto started = std::make_shared<Result<runner::SpareShim::Started>>(
        runner::SpareShim::start(executable));
    asio::post(actor_, [this, alive, started] {
      auto live = alive.lock();
      if (!live || !*live) return;  // the spare is killed and reaped with this handler
      keep_spare(*started);
    });
  });
}

pid_t RealWorld::spare_shim_pid() const { return spare_shim_ ? spare_shim_->pid() : 0; }

Result<std::unique_ptr<ShimProcess>> RealWorld::adopt_shim(pid_t pid, uint64_t start_ticks) {
  auto pidfd = os::open_pidfd_checked(pid, start_ticks);
  if (!pidfd) return tl::unexpected(pidfd.error());
  return std::make_unique<RealShim>(actor_, pid, start_ticks, *pidfd, std::nullopt);
}

Result<runner::ExitRecord> RealWorld::read_exit_record(const std::string& run_dir) {
  return runner::read_exit_record(run_dir);
}

Result<std::vector<StepRun>> RealWorld::read_step_record(const std::string& run_dir) {
  return runner::read_step_record(run_dir);
}

Result<std::unique_ptr<FileWatch>> RealWorld::watch_file(const std::string& path,
                                                         std::function<void()> changed) {
  return file_watcher_.watch(path, std::move(changed));
}

void RealWorld::sweep_session(pid_t session, uint64_t shim_start_ticks,
                              std::function<void(int killed)> done) {
  std::weak_ptr<bool> alive = alive_;
  worker_.post([this, alive, session, shim_start_ticks, done = std::move(done)]() mutable {
    // A killed process leaves the session a moment later: rounds 10 ms apart, for at most 1 s.
    auto table = os::make_linux_process_table();
    int killed = 0;
    for (int round = 0; round < 100; ++round) {
      auto r = runner::sweep_session_once(*table, session, shim_start_ticks);
      killed += r.signalled;
      if (r.done) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    asio::post(actor_, [alive, killed, done = std::move(done)] {
      if (auto a = alive.lock(); a && *a) done(killed);
    });
  });
}

void RealWorld::measure_trees(std::vector<std::string> paths, bool remove,
                              std::function<void(int64_t bytes)> done) {
  std::weak_ptr<bool> alive = alive_;
  worker_.post([this, alive, paths = std::move(paths), remove, done = std::move(done)]() mutable {
    int64_t bytes = 0;
    // Through fds, never following a link: the trees are their users' (os/file_tree.h).
    for (const auto& path : paths) {
      bytes += os::tree_bytes(path);
      if (!remove) continue;
      if (auto removed = os::remove_tree(path); !removed) {
        std::fprintf(stderr, "gpuq daemon: %s\n", removed.error().message.c_str());
      }
    }
    asio::post(actor_, [alive, bytes, done = std::move(done)] {
      if (auto a = alive.lock(); a && *a) done(bytes);
    });
  });
}

Status RealWorld::write_job_dir(const std::string& job_dir,
                                const std::vector<std::pair<std::string, std::string>>& scripts,
                                const std::string& login) {
  // A command has nothing to keep before it runs: its directory comes with its first run
  // (start_run makes the run directory's parents), which spares a sweep of 10,000 commands
  // 10,000 mkdirs in its submit.
  if (scripts.empty()) return ok();
  // Made here, now, as the daemon's: never a directory (or a link) found in its place.
  if (auto made = os::make_dirs(job_dir.substr(0, job_dir.rfind('/')), 0700); !made) return made;
  if (::mkdir(job_dir.c_str(), 0700) != 0) return errno_error("mkdir " + job_dir);
  // The snapshots: editing the submitted files later changes nothing.
  for (const auto& [path, text] : scripts) {
    if (auto written = os::write_file_atomic(path, text); !written) return written;
    if (::chmod(path.c_str(), 0700) != 0) return errno_error("chmod " + path);
  }
  // Then the whole directory is the submitter's, whose jobs run as them.
  auto who = submitter_identity(login);
  if (!who || !*who) return ok();  // the daemon's jobs; or a user gone, whose runs will fail
  for (const auto& [path, text] : scripts) {
    if (::lchown(path.c_str(), (*who)->uid, (*who)->gid) != 0) return errno_error("chown " + path);
  }
  if (::chown(job_dir.c_str(), (*who)->uid, (*who)->gid) != 0) return errno_error("chown " + job_dir);
  return ok();
}

Status RealWorld::write_file(const std::string& path, const std::string& content) {
  // The yield request, in a run directory its user owns: created new, never through a link
  // anywhere below the jobs directory. One there already (an earlier request) is the request.
  auto [trusted, relative] = os::split_trusted(path, 3);
  auto fd = os::open_beneath(trusted, relative, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (!fd && fd.error().code == Code::kConflict) return ok();
  if (!fd) return tl::unexpected(fd.error());
  os::UniqueFd file(*fd);
  if (::write(file.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size())) {
    return errno_error("write " + path);
  }
  return ok();
}

void RealWorld::remove_file(const std::string& path) {
  // The yield request withdrawn from its run directory, opened with no link followed (the
  // directory may be the job's user's, who could put a link in its place).
  auto slash = path.rfind('/');
  auto [trusted, relative] = os::split_trusted(path.substr(0, slash), 2);
  auto dir = os::open_beneath(trusted, relative, O_RDONLY | O_DIRECTORY);
  if (!dir) return;
  ::unlinkat(*dir, path.c_str() + slash + 1, 0);
  ::close(*dir);
}

int64_t RealWorld::modified_ms(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1'000'000;
}

void RealWorld::check_conditions(ConditionRequest request,
                                 std::function<void(ConditionResult)> done) {
  // The job's shell tests run as its submitter, as its runs do: a root daemon never runs a
  // user's REQUIRES text as root. The user is the stored job's, whoever asks for the check.
  auto job = store_.find_job(request.job_id, false);
  std::string login = job && *job ? (*job)->spec.user : "";
  auto who = submitter_identity(login);
  if (!who) {
    ConditionResult result;
    result.job_id = request.job_id;
    result.false_text = who.error().message;
    asio::post(actor_, [done = std::move(done), result = std::move(result)] { done(result); });
    return;
  }
  if (*who) {
    auto groups = os::groups_of((*who)->login, (*who)->gid);
    if (groups) (*who)->groups = std::move(*groups);
  }
  request.run_as = std::move(*who);
  checker_.check(std::move(request), std::move(done));
}

void RealWorld::clean_up(runner::CleanupTarget target,
                         std::function<void(runner::CleanupOutcome)> done) {
  std::weak_ptr<bool> alive = alive_;
  std::function<void(runner::CleanupOutcome)> deliver =
      [this, alive, done = std::move(done)](runner::CleanupOutcome outcome) {
        asio::post(actor_, [alive, done, outcome = std::move(outcome)] {
          if (auto a = alive.lock(); a && *a) done(outcome);
        });
      };
  if (target.containers) {
    // The run's processes first, then its containers, whose processes may be elsewhere.
    deliver = [this, runtime = *target.containers, run_id = target.run_id,
               deliver = std::move(deliver)](runner::CleanupOutcome outcome) {
      container_cleanup_worker_.post([this, runtime, run_id, deliver, outcome]() mutable {
        add_container_cleanup(runtime, run_id, outcome);
        deliver(std::move(outcome));
      });
    };
  }
  // A run started under cgroup containment (also one adopted after a restart) has its group
  // under the root still; other runs, and runs of a daemon without cgroups, are swept.
  if (cgroups_ && !target.run_id.empty()) {
    if (auto group = cgroups_->existing_group(target.run_id, target.cgroup_user)) {
      cgroup_cleaner_->add(target.key, *group, std::move(deliver));
      return;
    }
  }
  cleaner_.add(std::move(target), std::move(deliver));
}

}  // namespace gpuq::daemon
