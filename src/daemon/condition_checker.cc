// SPDX-License-Identifier: Apache-2.0
#include "daemon/condition_checker.h"

#include "model/run_variables.h"

#include <filesystem>
#include <fmt/format.h>

#include "os/command.h"

namespace gpuq::daemon {

ConditionChecker::ConditionChecker(boost::asio::io_context& actor, int threads) : actor_(actor) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { worker(); });
}

ConditionChecker::~ConditionChecker() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (auto& t : threads_) t.join();
}

void ConditionChecker::check(ConditionRequest request, std::function<void(ConditionResult)> on_done) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back({std::move(request), std::move(on_done)});
  }
  ready_.notify_one();
}

void ConditionChecker::worker() {
  while (true) {
    Work work;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    ConditionResult result = evaluate(work.request);
    boost::asio::post(actor_, [on_done = std::move(work.on_done), result = std::move(result)] {
      on_done(result);
    });
  }
}

bool ConditionChecker::run_test(const std::string& shell, const std::string& cwd,
                                const std::map<std::string, std::string>& env, Millis timeout,
                                std::string* why, const std::optional<os::UserIdentity>& run_as) {
  // env -i gives the test exactly the job's environment, not the daemon's — without any run
  // variable: a test is not the run, and must never carry a run's cleanup marker. "--" ends
  // env's options: a job's variable named "-S..." is a variable, never env's option that splits
  // its text into a command and runs it.
  std::vector<std::string> argv = {"env", "-i", "--"};
  for (const auto& [k, v] : env) {
    if (!is_run_variable(k)) argv.push_back(k + "=" + v);
  }
  argv.insert(argv.end(), {"bash", "-c", "cd -- \"$0\" && eval \"$1\"", cwd, shell});
  os::CommandOptions options;
  options.run_as = run_as;
  auto result = os::run_command_with(argv, timeout, options);
  if (!result) {
    if (why) *why = fmt::format("could not run `{}`: {}", shell, result.error().message);
    return false;
  }
  if (result->timed_out) {
    if (why) *why = fmt::format("`{}` did not finish within {}", shell, format_duration(timeout));
    return false;
  }
  if (result->exit_code == 0) return true;
  if (why) {
    std::string err = result->err;
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
    *why = fmt::format("`{}` exited {}{}", shell, result->exit_code,
                       err.empty() ? "" : ": " + err.substr(0, 200));
  }
  return false;
}

ConditionResult ConditionChecker::evaluate(const ConditionRequest& r) {
  ConditionResult result;
  result.job_id = r.job_id;
  for (const auto& file : r.files) {
    std::filesystem::path path(file);
    if (path.is_relative()) path = std::filesystem::path(r.cwd) / path;
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      result.false_text = fmt::format("file {} does not exist", path.string());
      return result;
    }
  }
  for (const auto& test : r.shell_tests) {
    std::string why;
    if (!run_test(test, r.cwd, r.env, r.timeout, &why, r.run_as)) {
      result.false_text = "REQUIRES false: " + why;
      return result;
    }
  }
  result.holds = true;
  if (!r.done_if.empty()) result.done = run_test(r.done_if, r.cwd, r.env, r.timeout, nullptr, r.run_as);
  return result;
}

}  // namespace gpuq::daemon
