// SPDX-License-Identifier: Apache-2.0
#include "runner/shim.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <string>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>
#include <map>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "base/time.h"
#include "model/job.h"
#include "os/identity.h"
#include "os/process.h"
#include "os/safe_open.h"
#include "runner/claim_watch.h"
#include "runner/job_launch.h"
#include "runner/log_cap.h"
#include "runner/run_files.h"

namespace gpuq::runner {
namespace {

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// How often a running job's log is measured against its cap and its disk looked at.
constexpr int kTickMs = 1000;

// Writes exit.json until it is written: the daemon learns of the run's end only from it, so a
// full disk must delay it, never lose it (the job would otherwise look lost and run again).
// Only a run directory that is gone ends the attempts. Notes a full disk in the record.
void write_exit_record_until_written(const std::string& run_dir, int run_dir_fd, ExitRecord& record) {
  int64_t delay_ms = 50;
  for (int attempt = 1;; ++attempt) {
    auto written = write_exit_record_at(run_dir_fd, record);
    if (written) return;
    if (written.error().code == Code::kNotFound) return;  // the run directory was removed
    if (disk_is_full(run_dir)) record.disk_full = true;
    if (attempt == 1 || attempt % 20 == 0) {
      std::fprintf(stderr, "gpuq shim: cannot write %s (%s); trying again\n",
                   exit_record_path(run_dir).c_str(), written.error().message.c_str());
    }
    ::poll(nullptr, 0, static_cast<int>(delay_ms));
    delay_ms = std::min<int64_t>(delay_ms * 2, 5000);
  }
}

// The run directory, opened once with no link on the way below the jobs directory: the shim
// writes through this fd, so the job's user swapping the directory for a link later changes
// nothing. `fresh`: it must still be the daemon's (made for this run, not yet given away).
// -1 when it cannot be opened so.
int open_run_dir(const std::string& run_dir, bool fresh) {
  auto [trusted, relative] = os::split_trusted(run_dir, 2);
  os::BeneathOptions options;
  if (fresh) options.owner = ::geteuid();
  auto fd = os::open_beneath(trusted, relative, O_RDONLY | O_DIRECTORY, 0, options);
  return fd ? *fd : -1;
}

class Shim {
 public:
  Shim(std::string run_dir, RunSpec spec)
      : run_dir_(std::move(run_dir)),
        spec_(std::move(spec)),
        own_env_(own_environment()),
        launch_(spec_, runtime_env_for(0)),
        claim_(spec_.claim_deadline_file) {}
  ~Shim() {
    if (run_dir_fd_ >= 0) ::close(run_dir_fd_);
  }
  Shim(const Shim&) = delete;
  Shim& operator=(const Shim&) = delete;

  int run(int go_fd) {
    sigset_t mask;
    sigemptyset(&mask);
    for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&mask, sig);
    ::sigprocmask(SIG_BLOCK, &mask, nullptr);
    ::signal(SIGPIPE, SIG_IGN);
    signal_fd_ = ::signalfd(-1, &mask, SFD_CLOEXEC);
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    run_dir_fd_ = open_run_dir(run_dir_, /*fresh=*/true);
    if (run_dir_fd_ < 0) {
      // Nothing can be written safely: the run reads as lost, and nothing of the job ran.
      std::fprintf(stderr, "gpuq shim: %s is not a run directory of the daemon's; nothing runs\n",
                   run_dir_.c_str());
      ::close(go_fd);
      return 1;
    }
    if (!wait_for_go(go_fd)) {
      // Said once, for a daemon that recorded the start and died before the go: the job did
      // not run. (Unwritten, the run reads as lost, which is requeued once.)
      record_.released = false;
      record_.error = "the daemon stopped before it let the run begin";
      record_.ended_at_ms = wall_now_ms();
      (void)write_exit_record_at(run_dir_fd_, record_);
      return 0;
    }
    if (claim_.start() == ClaimWatch::Due::kStop) {
      // The claim lapsed before the daemon let the run go: the job must not begin at all.
      record_.claim_lapsed = claim_.lapse();
      record_.ended_at_ms = wall_now_ms();
      write_exit_record_until_written(run_dir_, run_dir_fd_, record_);
      return 0;
    }

    // Opened through the run directory's fd before the directory is the user's (so no link can
    // be there yet), and only then given to the user with it.
    int log_fd = ::openat(run_dir_fd_, "output.log", O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (log_fd < 0) return finish_with_error(fmt::format("cannot open the log: {}", std::strerror(errno)));
    auto cap = LogCap::open_at(run_dir_fd_, "output.log", spec_.max_log_bytes);
    if (cap) cap_.emplace(std::move(*cap));
    if (spec_.run_as) {
      if (auto given = give_to_user(log_fd); !given) {
        ::close(log_fd);
        return finish_with_error(given.error().message);
      }
    }
    record_.started_at_ms = wall_now_ms();
    if (spec_.steps.empty()) {
      run_process(launch_, log_fd, 0);
    } else {
      run_steps(log_fd);
    }
    ::close(log_fd);
    record_.ended_at_ms = wall_now_ms();
    tick();
    write_exit_record_until_written(run_dir_, run_dir_fd_, record_);
    return 0;
  }

 private:
  // The run directory and its log become the job's user's (0700 and 0600 as made): the job
  // writes its files there. The records the shim writes later stay root's.
  Status give_to_user(int log_fd) {
    const os::UserIdentity& who = *spec_.run_as;
    if (::fchown(log_fd, who.uid, who.gid) != 0 || ::fchown(run_dir_fd_, who.uid, who.gid) != 0) {
      return errno_error(fmt::format("cannot give the run directory {} to {}", run_dir_, who.login));
    }
    return ok();
  }

  // Blocks until the daemon says go (one byte) or gives up (end of file).
  bool wait_for_go(int go_fd) {
    char byte = 0;
    ssize_t n;
    do {
      n = ::read(go_fd, &byte, 1);
    } while (n < 0 && errno == EINTR);
    ::close(go_fd);
    return n == 1;
  }

  // Runs one process of the run (the job, a step or a step's done_if) to its end and empties
  // its process group; `deadline_ms` (0: none) stops it as a timeout. False when it could not
  // be started: the log says why, as a shell would, and the exit status is 127.
  bool run_process(JobLaunch& launch, int log_fd, int64_t deadline_ms) {
    record_.exit_code.reset();
    record_.signal.reset();
    leader_done_ = false;
    auto spawned = launch.spawn(spec_, log_fd);
    if (!spawned) {
      write_all(log_fd, fmt::format("gpuq: {}\n", spawned.error().message));
      record_.exit_code = 127;
      return false;
    }
    pgid_ = *spawned;
    record_.job_pid = *spawned;
    supervise(*spawned, deadline_ms);
    return true;
  }

  // The steps from spec_.first_step on, in order, until one does not succeed or a stop comes;
  // steps.json says what each did as it happens.
  void run_steps(int log_fd) {
    const int count = static_cast<int>(spec_.steps.size());
    for (int index = spec_.first_step; index < count; ++index) {
      StepRun step;
      step.index = index;
      record_.steps.push_back(step);
    }
    for (size_t i = 0; i < record_.steps.size(); ++i) {
      if (stop_signalled_ || stop_arrived()) break;  // a stop before this step: it is not reached
      StepRun& step = record_.steps[i];
      const StepSpec& spec = spec_.steps[static_cast<size_t>(step.index)];
      std::map<std::string, std::string> env = {{"GPUQ_STEP_INDEX", std::to_string(step.index)},
                                                {"GPUQ_STEP_COUNT", std::to_string(count)},
                                                {"GPUQ_STEP_NAME", spec.name}};
      if (i > 0) env["GPUQ_RESUME"] = "0";  // only the step a resumed run begins with resumes
      step.started_at_ms = wall_now_ms();
      step.log_offset = log_size(log_fd);
      step.state = StepState::kRunning;
      note_steps();
      if (!spec.done_if.empty()) {
        JobLaunch test(spec_, {"bash", "-c", spec.done_if}, env);
        if (run_process(test, log_fd, 0) && record_.exit_code == 0 && !stop_signalled_) {
          step.state = StepState::kSkipped;
          step.ended_at_ms = wall_now_ms();
          note_steps();
          continue;
        }
        if (stop_signalled_) {
          step.state = StepState::kStopped;
          step.ended_at_ms = wall_now_ms();
          note_steps();
          break;
        }
      }
      JobLaunch launch(spec_, spec.argv, env, runtime_env_for(step.index));
      step_timed_out_ = false;
      int64_t deadline = spec.timeout_ms > 0 ? saturating_add(step.started_at_ms, spec.timeout_ms) : 0;
      run_process(launch, log_fd, deadline);
      step.ended_at_ms = wall_now_ms();
      step.exit_code = record_.exit_code;
      step.signal = record_.signal;
      if (step_timed_out_) {
        step.state = StepState::kTimedOut;
      } else if (record_.stop_requested || yielded()) {
        step.state = StepState::kStopped;
      } else {
        step.state = record_.exit_code == 0 ? StepState::kSucceeded : StepState::kFailed;
      }
      note_steps();
      if (step.state != StepState::kSucceeded) break;
    }
  }

  // The running step saved its state and yielded its GPUs, as asked (exit 75 while the yield
  // file exists): it stopped, it did not fail, and it runs again with GPUQ_RESUME=1.
  bool yielded() const {
    if (record_.exit_code != kYieldExitCode) return false;
    auto file = spec_.env.find("GPUQ_YIELD_FILE");
    return file != spec_.env.end() && ::access(file->second.c_str(), F_OK) == 0;
  }

  // Whether a stop came between two steps (it waits in the signalfd): it is taken now, as one
  // that comes while a step runs would be, and no further step starts.
  bool stop_arrived() {
    pollfd p{signal_fd_, POLLIN, 0};
    while (::poll(&p, 1, 0) > 0 && (p.revents & POLLIN)) {
      signalfd_siginfo info{};
      if (::read(signal_fd_, &info, sizeof info) != sizeof info) return false;
      if (info.ssi_signo == SIGCHLD) continue;
      stop_signalled_ = true;
      record_.stop_requested = true;
      return true;
    }
    return false;
  }

  // steps.json now; a write that fails (a full disk) is not fatal: exit.json has the steps too.
  void note_steps() {
    if (auto written = write_step_record_at(run_dir_fd_, record_.steps); !written) {
      std::fprintf(stderr, "gpuq shim: cannot write %s: %s\n", steps_path(run_dir_).c_str(),
                   written.error().message.c_str());
    }
  }

  static int64_t log_size(int log_fd) {
    struct stat st{};
    return ::fstat(log_fd, &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
  }

  int finish_with_error(const std::string& error) {
    record_.error = error;
    record_.exit_code = 127;
    record_.ended_at_ms = wall_now_ms();
    write_exit_record_until_written(run_dir_, run_dir_fd_, record_);
    return 1;
  }

  // The log's cap and the disk's space, looked at every kTickMs while the job runs.
  void tick() {
    if (cap_) {
      cap_->check();
      record_.log_dropped_bytes = cap_->dropped_bytes();
    }
    // The job's own writes to output.log fail silently for us when the disk is full: say that
    // its log may lack output.
    if (!record_.disk_full && disk_is_full(run_dir_)) record_.disk_full = true;
    next_tick_ms_ = wall_now_ms() + kTickMs;
  }

  // Reaps every exited child; notes the job's own status.
  void reap(pid_t child) {
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      if (pid != child) continue;
      leader_done_ = true;
      if (WIFEXITED(status)) record_.exit_code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) record_.signal = WTERMSIG(status);
    }
  }

  void signal_group(int sig) { ::kill(-pgid_, sig); }

  // SIGTERM to the group, then SIGKILL at `kill_at` once the grace is over (or sooner, when
  // leftovers of an exited job were being stopped already); once per run.
  void begin_stop(int64_t& kill_at) {
    stop_signalled_ = true;
    signal_group(SIGTERM);
    signal_group(SIGCONT);
    int64_t after_grace = wall_now_ms() + spec_.kill_grace_ms;
    kill_at = kill_at != 0 ? std::min(kill_at, after_grace) : after_grace;
  }

  // The fleet claim's deadline (ClaimWatch): a lapsed claim stops the run as a stop request
  // would, and its kill-by time SIGKILLs the group even within the grace.
  void watch_claim(pid_t child, int64_t& kill_at) {
    switch (claim_.check()) {
      case ClaimWatch::Due::kNothing: return;
      case ClaimWatch::Due::kStop:
        if (stop_signalled_) return;  // stopping already, for the daemon
        reap(child);
        // A job that exited by itself keeps its own status; only its leftovers are stopped.
        if (!leader_done_) record_.claim_lapsed = claim_.lapse();
        begin_stop(kill_at);
        return;
      case ClaimWatch::Due::kKill:
        signal_group(SIGKILL);
        kill_at = wall_now_ms() + 1000;  // keep insisting once a second
        return;
    }
  }

  // Waits for the job, then empties its process group. At `deadline_ms` (0: none) a job still
  // running is stopped as a step's timeout is.
  void supervise(pid_t child, int64_t deadline_ms) {
    int64_t kill_at = 0;  // when set, SIGKILL the group at this time
    bool leftovers_signalled = false;
    while (true) {
      reap(child);
      if (deadline_ms != 0 && !leader_done_ && !stop_signalled_ && wall_now_ms() >= deadline_ms) {
        step_timed_out_ = true;
        begin_stop(kill_at);
      }
      if (leader_done_) {
        if (!process_group_alive(pgid_)) return;
        if (!leftovers_signalled) {
          leftovers_signalled = true;
          record_.leftovers_killed = count_group_members();
          signal_group(SIGTERM);
          signal_group(SIGCONT);
          if (kill_at == 0) kill_at = wall_now_ms() + spec_.kill_grace_ms;
        }
      }
      if (wall_now_ms() >= next_tick_ms_) tick();
      int timeout = static_cast<int>(std::max<int64_t>(0, next_tick_ms_ - wall_now_ms()));
      if (kill_at != 0) timeout = std::min(timeout, static_cast<int>(std::max<int64_t>(0, kill_at - wall_now_ms())));
      if (deadline_ms != 0 && !stop_signalled_) {
        timeout = std::min(timeout, static_cast<int>(std::max<int64_t>(0, deadline_ms - wall_now_ms())));
      }
      // Zombies of processes that are not our children still count as group members for a
      // moment; poll briefly so the loop notices the group emptying.
      if (leader_done_) timeout = std::min(timeout, 20);
      pollfd p[2] = {{signal_fd_, POLLIN, 0}, {claim_.fd(), POLLIN, 0}};  // a -1 fd is skipped
      int ready = ::poll(p, 2, timeout);
      watch_claim(child, kill_at);
      if (ready > 0 && (p[0].revents & POLLIN)) {
        signalfd_siginfo info{};
        if (::read(signal_fd_, &info, sizeof info) == sizeof info &&
            info.ssi_signo != SIGCHLD && !stop_signalled_) {
          // A job that exited by itself before the stop arrived keeps its own status: the
          // daemon tells "stopped" from "exited" by this flag (a natural exit racing a
          // preemption is not a preemption).
          reap(child);
          record_.stop_requested = !leader_done_;
          begin_stop(kill_at);
        }
      }
      if (kill_at != 0 && wall_now_ms() >= kill_at) {
        signal_group(SIGKILL);
        kill_at = wall_now_ms() + 1000;  // keep insisting once a second
      }
    }
  }

  static bool process_group_alive(pid_t pgid) { return ::kill(-pgid, 0) == 0; }

  int count_group_members() const {
    return static_cast<int>(os::processes_in_group(pgid_).size());
  }

  // The shim's environment as it started (the daemon's: spawn() later sets PATH to the job's).
  static std::vector<std::string> own_environment() {
    std::vector<std::string> entries;
    for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) entries.emplace_back(*entry);
    return entries;
  }
  // The environment a step starts its runtime with when the step is a root runtime's `run`
  // (RunSpec::root_runtime); nullptr for every other step, which runs as the job.
  const std::vector<std::string>* runtime_env_for(int step_index) const {
    if (!spec_.root_runtime) return nullptr;
    const auto& steps = spec_.root_runtime->steps;
    return std::find(steps.begin(), steps.end(), step_index) != steps.end() ? &own_env_ : nullptr;
  }

  std::string run_dir_;
  int run_dir_fd_ = -1;  // held for the shim's life; every record is written through it
  RunSpec spec_;
  std::vector<std::string> own_env_;
  JobLaunch launch_;
  ExitRecord record_;
  int signal_fd_ = -1;
  pid_t pgid_ = 0;
  bool leader_done_ = false;
  bool stop_signalled_ = false;
  bool step_timed_out_ = false;  // the running step's own timeout stopped it
  std::optional<LogCap> cap_;
  int64_t next_tick_ms_ = 0;
  ClaimWatch claim_;
};

}  // namespace

struct PreparedShim::State {
  std::string run_dir;
  std::optional<Shim> shim;  // empty when run.json could not be read: `error` says why
  std::string error;
};

PreparedShim PreparedShim::prepare(const std::string& run_dir) {
  auto state = std::make_unique<State>();
  state->run_dir = run_dir;
  auto spec = read_run_spec(run_dir);
  if (spec && !spec->run_as_error.empty()) {
    state->error = spec->run_as_error;
  } else if (spec && spec->run_as && spec->run_as->uid == 0) {
    state->error = "run.json names root as the job's user: a job runs as root only without run_as";
  } else if (spec && spec->run_as && spec->run_as->groups.empty()) {
    // The daemon writes them (the primary group at least): the shim looks up no user itself.
    state->error = fmt::format("run.json names no groups for the job's user {}: it was not written "
                               "by this gpuq daemon; run the job again",
                               spec->run_as->login);
  } else if (spec) {
    state->shim.emplace(run_dir, std::move(*spec));
  } else {
    state->error = spec.error().message;
  }
  return PreparedShim(std::move(state));
}

PreparedShim::PreparedShim(std::unique_ptr<State> state) : state_(std::move(state)) {}
PreparedShim::PreparedShim(PreparedShim&&) noexcept = default;
PreparedShim::~PreparedShim() = default;

int PreparedShim::run(int go_fd) {
  if (state_->shim) return state_->shim->run(go_fd);
  ExitRecord record;
  record.error = state_->error;
  record.exit_code = 127;
  int run_dir_fd = open_run_dir(state_->run_dir, /*fresh=*/false);
  if (run_dir_fd < 0) return 1;
  write_exit_record_until_written(state_->run_dir, run_dir_fd, record);
  return 1;
}

int run_shim(const std::string& run_dir, int go_fd) { return PreparedShim::prepare(run_dir).run(go_fd); }

namespace {

// Reads exactly `size` bytes; false at end of file (or an error) before them.
bool read_exactly(int fd, char* into, size_t size) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, into + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// A spare shim's run directory, as the daemon assigns it (shim.h); nullopt when the daemon let
// it go unassigned (end of file) or sent something else.
std::optional<std::string> read_assigned_run_dir(int go_fd) {
  uint32_t length = 0;
  if (!read_exactly(go_fd, reinterpret_cast<char*>(&length), sizeof length)) return std::nullopt;
  if (length == 0 || length > kMaxAssignedRunDir) return std::nullopt;
  std::string run_dir(length, '\0');
  if (!read_exactly(go_fd, run_dir.data(), length)) return std::nullopt;
  return run_dir;
}

}  // namespace

int shim_main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "gpuq shim: internal command, started by the daemon (RUN_DIR|- GO_FD)\n");
    return 2;
  }
  int go_fd = std::atoi(argv[2]);
  // Nothing of the daemon's (its socket, its lock, its store) may reach the job.
  ::close_range(static_cast<unsigned>(go_fd) + 1, ~0U, 0);
  if (std::strcmp(argv[1], kSpareRunDirWord) != 0) return run_shim(argv[1], go_fd);
  auto run_dir = read_assigned_run_dir(go_fd);
  if (!run_dir) return 0;  // a spare never needed: nothing was asked of it
  return run_shim(*run_dir, go_fd);
}

}  // namespace gpuq::runner
