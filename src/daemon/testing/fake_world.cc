// SPDX-License-Identifier: Apache-2.0
#include "daemon/testing/fake_world.h"

#include <algorithm>
#include <csignal>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace gpuq::daemon::testing {

class FakeWorld::FakeTimer : public Timer {
 public:
  explicit FakeTimer(std::shared_ptr<TimerEntry> entry) : entry_(std::move(entry)) {}
  ~FakeTimer() override { cancel(); }
  void arm(int64_t at_ms, std::function<void()> fire) override {
    entry_->at_ms = at_ms;
    entry_->fire = std::move(fire);
    entry_->armed = true;
  }
  void cancel() override {
    entry_->armed = false;
    entry_->fire = nullptr;
  }

 private:
  std::shared_ptr<TimerEntry> entry_;
};

class FakeWorld::FakeShim : public ShimProcess {
 public:
  FakeShim(FakeWorld& world, Shim& shim) : world_(world), shim_(shim) {}
  ~FakeShim() override {
    if (!shim_.released) shim_.dropped = true;
    shim_.on_exit = nullptr;
  }
  pid_t pid() const override { return shim_.pid; }
  uint64_t start_ticks() const override { return shim_.ticks; }
  Status release() override {
    shim_.released = true;
    shim_.commits_at_release = world_.commits();
    return ok();
  }
  os::SignalResult signal(int sig) override {
    if (shim_.exited) return os::SignalResult::kGone;
    shim_.signals.push_back(sig);
    return os::SignalResult::kSent;
  }
  void on_exit(std::function<void()> exited) override {
    shim_.on_exit = std::move(exited);
    if (shim_.exited) world_.exit_now(shim_);
  }

 private:
  FakeWorld& world_;
  Shim& shim_;
};

FakeWorld::FakeWorld(store::Store& store, int64_t start_ms) : store_(store), now_ms_(start_ms) {}

FakeWorld::~FakeWorld() = default;

void FakeWorld::run() {
  for (int guard = 0; guard < 1'000'000; ++guard) {
    if (!posted_.empty()) {
      auto fn = std::move(posted_.front());
      posted_.pop_front();
      fn();
      continue;
    }
    // Timers due now (armed for the present or the past) fire as the loop turns.
    std::shared_ptr<TimerEntry> due;
    for (const auto& t : timers_) {
      if (t->armed && t->at_ms <= now_ms_ && (!due || t->at_ms < due->at_ms)) due = t;
    }
    if (!due) return;
    due->armed = false;
    auto fire = std::move(due->fire);
    due->fire = nullptr;
    if (fire) fire();
  }
}

void FakeWorld::advance(int64_t ms) {
  int64_t until = now_ms_ + ms;
  run();
  while (true) {
    std::shared_ptr<TimerEntry> next;
    for (const auto& t : timers_) {
      if (t->armed && t->at_ms <= until && (!next || t->at_ms < next->at_ms)) next = t;
    }
    if (!next) break;
    now_ms_ = std::max(now_ms_, next->at_ms);
    run();
  }
  now_ms_ = until;
  run();
}

void FakeWorld::fail_commits(int n, std::string error, int after) {
  fail_commits_ = n;
  pass_commits_ = after;
  commit_error_ = std::move(error);
}

std::unique_ptr<Timer> FakeWorld::make_timer() {
  timers_.push_back(std::make_shared<TimerEntry>());
  return std::make_unique<FakeTimer>(timers_.back());
}

Status FakeWorld::commit(const std::function<Status()>& writes) {
  ++commits_;
  bool fails = false;
  if (pass_commits_ > 0) {
    --pass_commits_;
  } else if (fail_commits_ > 0) {
    fails = true;
    --fail_commits_;
  }
  // The writes really run and are really rolled back: a failure is the store's, not a skip.
  auto result = store_.transaction([&]() -> Status {
    if (auto st = writes(); !st) return st;
    if (fails) return fail(Code::kIoError, commit_error_);
    return ok();
  });
  if (!result) ++failed_commits_;
  return result;
}

Status FakeWorld::create_run_dir(const std::string& run_dir, const runner::RunSpec& spec) {
  if (!run_dirs_.insert(run_dir).second) return fail(Code::kConflict, run_dir + " exists already");
  run_specs_[run_dir] = spec;
  return ok();
}

Result<std::unique_ptr<ShimProcess>> FakeWorld::launch_shim(const std::string& run_dir,
                                                            const std::string& /*run_id*/,
                                                            const std::string& /*cgroup_user*/) {
  if (fail_launches_ > 0) {
    --fail_launches_;
    return fail(Code::kIoError, launch_error_);
  }
  auto shim = std::make_unique<Shim>();
  shim->pid = next_pid_++;
  shim->ticks = static_cast<uint64_t>(now_ms_ / 10);
  shim->run_dir = run_dir;
  shims_.push_back(std::move(shim));
  return std::make_unique<FakeShim>(*this, *shims_.back());
}

Result<std::unique_ptr<ShimProcess>> FakeWorld::adopt_shim(pid_t pid, uint64_t start_ticks) {
  for (auto& shim : shims_) {
    if (shim->pid == pid && shim->ticks == start_ticks && !shim->exited) {
      return std::make_unique<FakeShim>(*this, *shim);
    }
  }
  return fail(Code::kNotFound, "no such shim");
}

void FakeWorld::add_live_shim(pid_t pid, uint64_t ticks) {
  auto shim = std::make_unique<Shim>();
  shim->pid = pid;
  shim->ticks = ticks;
  shim->released = true;
  shims_.push_back(std::move(shim));
}

void FakeWorld::fail_launches(int n, std::string error) {
  fail_launches_ = n;
  launch_error_ = std::move(error);
}

FakeWorld::Shim* FakeWorld::shim_of(const std::string& run_dir) {
  for (auto& shim : shims_) {
    if (shim->run_dir == run_dir) return shim.get();
  }
  return nullptr;
}

void FakeWorld::exit_now(Shim& shim) {
  auto cb = std::move(shim.on_exit);
  shim.on_exit = nullptr;
  if (cb) post(std::move(cb));
}

void FakeWorld::exit_shim(const std::string& run_dir, runner::ExitRecord record) {
  exit_records_[run_dir] = std::move(record);
  vanish_shim(run_dir);
}

void FakeWorld::vanish_shim(const std::string& run_dir) {
  for (auto& shim : shims_) {
    if (shim->run_dir != run_dir || shim->exited) continue;
    shim->exited = true;
    exit_now(*shim);
  }
}

void FakeWorld::put_exit_record(const std::string& run_dir, runner::ExitRecord record) {
  exit_records_[run_dir] = std::move(record);
}

Result<runner::ExitRecord> FakeWorld::read_exit_record(const std::string& run_dir) {
  if (exit_records_unreadable_) return fail(Code::kIoError, "open exit.json: Too many open files (injected)");
  auto it = exit_records_.find(run_dir);
  if (it == exit_records_.end()) return fail(Code::kNotFound, run_dir + "/exit.json does not exist");
  return it->second;
}

void FakeWorld::sweep_session(pid_t session, uint64_t shim_start_ticks, std::function<void(int)> done) {
  swept_.emplace_back(session, shim_start_ticks);
  post([done = std::move(done)] { done(0); });
}

class FakeWorld::FakeWatch : public FileWatch {
 public:
  FakeWatch(FakeWorld& world, uint64_t id) : world_(world), id_(id) {}
  ~FakeWatch() override { world_.watches_.erase(id_); }

 private:
  FakeWorld& world_;
  uint64_t id_;
};

void FakeWorld::write_steps(const std::string& run_dir, std::vector<StepRun> steps) {
  step_records_[run_dir] = std::move(steps);
  std::string path = runner::steps_path(run_dir);
  for (const auto& [id, watch] : watches_) {
    if (watch.first != path) continue;
    uint64_t watch_id = id;
    post([this, watch_id] {
      auto it = watches_.find(watch_id);
      if (it != watches_.end()) it->second.second();
    });
  }
}

Result<std::vector<StepRun>> FakeWorld::read_step_record(const std::string& run_dir) {
  auto it = step_records_.find(run_dir);
  if (it == step_records_.end()) return fail(Code::kNotFound, "no steps.json in " + run_dir);
  return it->second;
}

Result<std::unique_ptr<FileWatch>> FakeWorld::watch_file(const std::string& path, std::function<void()> changed) {
  uint64_t id = next_watch_++;
  watches_[id] = {path, std::move(changed)};
  return std::unique_ptr<FileWatch>(std::make_unique<FakeWatch>(*this, id));
}

Status FakeWorld::write_job_dir(const std::string&,
                                const std::vector<std::pair<std::string, std::string>>& scripts,
                                const std::string&) {
  for (const auto& [path, text] : scripts) files_[path] = text;
  return ok();
}

Status FakeWorld::write_file(const std::string& path, const std::string& content) {
  files_[path] = content;
  modified_[path] = now_ms_;
  return ok();
}

int64_t FakeWorld::modified_ms(const std::string& path) {
  auto it = modified_.find(path);
  return it == modified_.end() ? 0 : it->second;
}

void FakeWorld::measure_trees(std::vector<std::string> paths, bool remove,
                              std::function<void(int64_t bytes)> done) {
  int64_t bytes = 0;
  for (const auto& path : paths) {
    if (auto it = tree_sizes_.find(path); it != tree_sizes_.end()) bytes += it->second;
    if (remove) removed_trees_.push_back(path);
  }
  post([done = std::move(done), bytes] { done(bytes); });
}

void FakeWorld::check_conditions(ConditionRequest request, std::function<void(ConditionResult)> done) {
  conditions_.push_back({std::move(request), std::move(done)});
}

bool FakeWorld::answer_conditions(int64_t job_id, bool holds, bool done, std::string false_text) {
  auto it = std::find_if(conditions_.begin(), conditions_.end(),
                         [&](const ConditionCall& c) { return c.request.job_id == job_id; });
  if (it == conditions_.end()) return false;
  ConditionResult result;
  result.job_id = job_id;
  result.holds = holds;
  result.done = done;
  result.false_text = std::move(false_text);
  auto cb = std::move(it->done);
  conditions_.erase(it);
  post([cb = std::move(cb), result] { cb(result); });
  return true;
}

void FakeWorld::clean_up(runner::CleanupTarget target, std::function<void(runner::CleanupOutcome)> done) {
  cleanup_targets_.push_back(target);
  if (!auto_clean_) {
    cleanups_.push_back({std::move(target), std::move(done)});
    return;
  }
  runner::CleanupOutcome outcome;
  outcome.key = target.key;
  outcome.confirmed = true;
  outcome.scans = 2;
  post([done = std::move(done), outcome] { done(outcome); });
}

runner::CleanupTarget FakeWorld::answer_cleanup(runner::CleanupOutcome outcome) {
  if (cleanups_.empty()) {
    ADD_FAILURE() << "no cleanup to answer";
    return {};
  }
  CleanupCall call = std::move(cleanups_.front());
  cleanups_.pop_front();
  outcome.key = call.target.key;
  call.done(outcome);
  return call.target;
}

Result<runner::ContainerRuntime> FakeWorld::container_runtime(const ContainersConfig& config) {
  if (runtime_ && !config.extra_args.empty()) {
    runner::ContainerRuntime runtime = *runtime_;
    runtime.extra_args = config.extra_args;
    return runtime;
  }
  return runtime_;
}

void FakeWorld::stop_containers(runner::ContainerRuntime, std::string run_id, int64_t) {
  stopped_containers_.push_back(std::move(run_id));
}

void FakeWorld::prepare_images(ImagePrep request, std::function<void(ImagePrepResult)> done) {
  image_calls_.push_back({std::move(request), std::move(done)});
}

bool FakeWorld::answer_images(int64_t job_id, std::vector<std::string> to_pull, std::string error) {
  auto it = std::find_if(image_calls_.begin(), image_calls_.end(),
                         [&](const ImageCall& c) { return c.request.job_id == job_id; });
  if (it == image_calls_.end()) return false;
  ImagePrepResult result;
  result.job_id = job_id;
  result.seq = it->request.seq;
  result.ok = error.empty();
  result.error = std::move(error);
  if (!it->request.pull) result.to_pull = std::move(to_pull);
  auto done = std::move(it->done);
  image_calls_.erase(it);
  post([done = std::move(done), result = std::move(result)] { done(result); });
  return true;
}

Status FakeWorld::set_dir_mode(const std::string& path, mode_t mode) {
  dir_modes_[path] = mode;
  return ok();
}

Status FakeWorld::give_dir(const std::string& path, uid_t uid, gid_t gid) {
  given_dirs_[path] = fmt::format("{}:{}", uid, gid);
  return ok();
}

}  // namespace gpuq::daemon::testing
