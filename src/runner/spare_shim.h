// SPDX-License-Identifier: Apache-2.0
// Shims started ahead of the runs they will serve (launcher.h's launch_spare_shim), at most
// `capacity` waiting. A start takes one and assigns it its run directory, one write to a pipe,
// instead of spawning a shim on its path: posix_spawn waits for the exec (its vfork: 0.6-6 ms
// here), and the shim's start time is then read from /proc and a pidfd opened. The owner
// refills after the start, off its path; with as many waiting as it has GPUs, a burst of starts
// (a queue released onto idle GPUs) spawns none of its shims itself while the spares are
// younger than max_age_ms. A spare is never given a
// run it was not assigned: unassigned, it holds no run, no GPU and no file; it exits when its
// pipe closes (the daemon gone), and is killed and reaped when this object is destroyed. A
// spare's start time becomes its run's shim's, which the marker sweep after the run uses as
// the start of the processes it looks at: one older than max_age_ms is not handed out but
// replaced, so that start stays close to the run's own.
// An owner on an event loop starts spares elsewhere with start(), which any thread may call,
// and hands each over with keep().
// Thread rules: start() on any thread; the rest one thread at a time. Owns the spare processes
// until they are taken.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

#include "base/status.h"
#include "os/unique_fd.h"
#include "runner/launcher.h"

namespace gpuq::runner {

class SpareShim {
 public:
  static constexpr int64_t kMaxAgeMs = 10'000;
  explicit SpareShim(std::string executable, int64_t max_age_ms = kMaxAgeMs, size_t capacity = 1)
      : executable_(std::move(executable)), max_age_ms_(max_age_ms), capacity_(capacity) {}
  SpareShim(const SpareShim&) = delete;
  SpareShim& operator=(const SpareShim&) = delete;

  // A spare handed over: the shim, waiting for its go byte, and its pidfd (the taker's to close).
  struct Taken {
    LaunchedShim launched;
    int pidfd = -1;
  };
  // A spare started: on its way to the SpareShim that keeps it, or waiting there. One dropped
  // (its owner full or gone, or the spare dead or too old) is killed and reaped.
  class Started {
   public:
    Started(LaunchedShim launched, os::UniqueFd pidfd)
        : launched_(std::move(launched)), pidfd_(std::move(pidfd)) {}
    Started(Started&& other) noexcept
        : launched_(std::move(other.launched_)), pidfd_(std::move(other.pidfd_)) {
      other.launched_.reset();  // the moved-from one owns no process
    }
    Started& operator=(Started&&) = delete;
    ~Started();
    pid_t pid() const { return launched_ ? launched_->pid() : 0; }

   private:
    friend class SpareShim;
    std::optional<LaunchedShim> launched_;  // empty once handed over
    os::UniqueFd pidfd_;
  };
  // Starts a spare of `executable`: its exec is waited for, its pidfd opened. Any thread.
  static Result<Started> start(const std::string& executable);
  // Keeps `started` waiting; when `capacity` wait already, `started` is dropped instead.
  void keep(Started started);
  // The oldest waiting spare that lives and is younger than max_age_ms, assigned `run_dir`
  // (run.json must be there), or nullopt when there is none: the caller spawns one of its own.
  // Those passed over (dead, too old) are set aside for retired(), not reaped here: when no
  // owner renewed them (retire_aging) every spare is too old after an idle spell, and killing
  // and reaping them all is not the start's work.
  std::optional<Taken> take(const std::string& run_dir);
  // The spares take() passed over, handed out to be dropped (killed and reaped) where the
  // caller likes; none are kept.
  std::vector<Started> retired();
  // Sets aside for retired(), as take() would, every waiting spare that has exited or is
  // max_age_ms - lead_ms old or more: its owner replaces them while nothing starts, so that the
  // start after a quiet spell finds a young spare instead of spawning a shim on its own path.
  void retire_aging(int64_t lead_ms);
  // How many waiting spares live and are younger than max_age_ms - lead_ms.
  size_t young(int64_t lead_ms) const;
  // How long until the oldest waiting spare is max_age_ms - lead_ms old (0: it is, and
  // retire_aging sets it aside); nullopt when none waits.
  std::optional<int64_t> ms_until_aging(int64_t lead_ms) const;
  // Starts spares on this thread (start() and keep()) until `capacity` wait. An error says why
  // one could not be (no processes left, the shim binary gone); take() finds fewer.
  Status refill();

  const std::string& executable() const { return executable_; }
  size_t capacity() const { return capacity_; }
  size_t waiting() const { return spares_.size(); }
  // The oldest waiting spare's pid (the next take()'s, while it lives and is young enough); 0
  // when none waits.
  pid_t pid() const { return spares_.empty() ? 0 : spares_.front().pid(); }

 private:
  int64_t age_ms(const Started& spare) const;  // since it started (start ticks, boot clock)

  std::string executable_;
  int64_t max_age_ms_;
  size_t capacity_;
  std::deque<Started> spares_;  // oldest first
  std::vector<Started> retired_;
};

}  // namespace gpuq::runner
