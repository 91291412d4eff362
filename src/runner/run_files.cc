// SPDX-License-Identifier: Apache-2.0
#include "runner/run_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "os/process.h"
#include "os/safe_open.h"

namespace gpuq::runner {

using nlohmann::json;

namespace {

// Writes `content` to `path` in place (no temporary file and rename): for a file that no one
// reads before this returns. A failed write (a full disk) leaves no partial file holding space.
Status write_unread_file(int dir_fd, const std::string& path, const std::string& content) {
  // O_EXCL: a fresh file in a fresh directory, never one found there.
  std::string name = path.substr(path.rfind('/') + 1);
  int fd = ::openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return errno_error("open " + path);
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      ::unlinkat(dir_fd, name.c_str(), 0);
      return errno_error("write " + path, err);
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    int err = errno;
    ::unlinkat(dir_fd, name.c_str(), 0);
    return errno_error("close " + path, err);
  }
  return ok();
}

// The largest record read: far more than any real one, small enough that a planted file cannot
// fill the reader's memory.
constexpr size_t kMaxRunSpecBytes = 64 << 20;
constexpr size_t kMaxRecordBytes = 16 << 20;

// A record of the run directory `run_dir` (JOBS/ID/run-N), read trusting only JOBS: no link
// below it, a regular file the reader's euid owns (one the shim or daemon wrote, not the job's
// user), nonblocking (a FIFO is refused, never waited on).
Result<std::string> read_record(const std::string& path, size_t max_bytes) {
  auto [trusted, relative] = os::split_trusted(path, 3);
  return os::read_file_beneath(trusted, relative, max_bytes, ::geteuid());
}

json identity_to_json(const os::UserIdentity& who) {
  return {{"uid", who.uid},       {"gid", who.gid},     {"groups", who.groups},
          {"login", who.login},   {"home", who.home},   {"shell", who.shell}};
}

os::UserIdentity identity_from_json(const json& j) {
  os::UserIdentity who;
  who.uid = j.at("uid").get<uid_t>();
  who.gid = j.at("gid").get<gid_t>();
  who.groups = j.value("groups", std::vector<gid_t>());
  who.login = j.at("login").get<std::string>();
  who.home = j.value("home", std::string());
  who.shell = j.value("shell", std::string("/bin/sh"));
  return who;
}

}  // namespace

std::string run_spec_path(const std::string& run_dir) { return run_dir + "/run.json"; }
std::string exit_record_path(const std::string& run_dir) { return run_dir + "/exit.json"; }
std::string log_path(const std::string& run_dir) { return run_dir + "/output.log"; }
std::string steps_path(const std::string& run_dir) { return run_dir + "/steps.json"; }

namespace {

json steps_to_json(const std::vector<StepRun>& steps) {
  json list = json::array();
  for (const StepRun& step : steps) list.push_back(step_run_to_json(step));
  return list;
}

Result<std::vector<StepRun>> steps_from_json(const json& list, const std::string& path) {
  if (!list.is_array()) return fail(Code::kCorruption, path + ": steps is not a list");
  std::vector<StepRun> steps;
  for (const json& item : list) {
    auto step = step_run_from_json(item);
    if (!step) return fail(Code::kCorruption, path + ": " + step.error().message);
    steps.push_back(*step);
  }
  return steps;
}

}  // namespace

Status write_run_spec(const std::string& run_dir, const RunSpec& spec) {
  int dir_fd = ::open(run_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return errno_error("open " + run_dir);
  auto written = write_run_spec_at(dir_fd, spec);
  ::close(dir_fd);
  return written;
}

Status write_run_spec_at(int run_dir_fd, const RunSpec& spec) {
  json j = {{"argv", spec.argv}, {"env", spec.env}, {"cwd", spec.cwd},
            {"kill_grace_ms", spec.kill_grace_ms}, {"max_log_bytes", spec.max_log_bytes},
            {"umask", static_cast<int>(spec.umask)}};
  if (!spec.claim_deadline_file.empty()) j["claim_deadline_file"] = spec.claim_deadline_file;
  if (spec.run_as) j["run_as"] = identity_to_json(*spec.run_as);
  if (!spec.run_as_error.empty()) j["run_as_error"] = spec.run_as_error;
  if (spec.root_runtime) {
    j["root_runtime"] = {{"steps", spec.root_runtime->steps}, {"env_file", spec.root_runtime->env_file}};
  }
  if (!spec.steps.empty()) {
    json steps = json::array();
    for (const StepSpec& step : spec.steps) steps.push_back(step_spec_to_json(step));
    j["steps"] = std::move(steps);
    j["first_step"] = spec.first_step;
  }
  // Written in place, not through a temporary file and a rename: the run directory was just
  // made (a start never reuses one), and its shim, the only reader, is launched after this
  // returns. Not fsynced: a run.json lost or cut short in a crash belongs to a run that was
  // never recorded (the run is recorded only after its shim is launched).
  return write_unread_file(run_dir_fd, "run.json", j.dump());
}

Result<RunSpec> read_run_spec(const std::string& run_dir) {
  // Only the daemon's own: a run.json the job's user replaced could run anything as root.
  auto text = read_record(run_spec_path(run_dir), kMaxRunSpecBytes);
  if (!text) return tl::unexpected(text.error());
  json j = json::parse(*text, nullptr, false);
  RunSpec spec;
  try {
    spec.argv = j.at("argv").get<std::vector<std::string>>();
    spec.env = j.at("env").get<std::map<std::string, std::string>>();
    spec.cwd = j.at("cwd").get<std::string>();
    spec.kill_grace_ms = j.at("kill_grace_ms").get<int64_t>();
    spec.max_log_bytes = j.value("max_log_bytes", int64_t{0});
    spec.claim_deadline_file = j.value("claim_deadline_file", std::string());
    int mask = j.value("umask", 022);
    if (mask < 0 || mask > 0777) {
      return fail(Code::kCorruption, run_spec_path(run_dir) + ": umask " + std::to_string(mask) +
                                         " is not a file mode mask (0 to 0777)");
    }
    spec.umask = static_cast<mode_t>(mask);
    for (const json& item : j.value("steps", json::array())) {
      auto step = step_spec_from_json(item);
      if (!step) return fail(Code::kCorruption, run_spec_path(run_dir) + ": " + step.error().message);
      spec.steps.push_back(std::move(*step));
    }
    spec.first_step = j.value("first_step", 0);
    if (j.contains("run_as")) spec.run_as = identity_from_json(j.at("run_as"));
    spec.run_as_error = j.value("run_as_error", std::string());
    if (j.contains("root_runtime")) {
      const json& r = j.at("root_runtime");
      spec.root_runtime = RunSpec::RootRuntime{r.at("steps").get<std::vector<int>>(),
                                               r.at("env_file").get<std::vector<std::string>>()};
    }
  } catch (const json::exception& e) {
    return fail(Code::kCorruption, run_spec_path(run_dir) + ": " + e.what());
  }
  if (spec.argv.empty() && spec.steps.empty()) {
    return fail(Code::kCorruption, run_spec_path(run_dir) + ": empty argv");
  }
  if (spec.first_step < 0 || (!spec.steps.empty() && spec.first_step > static_cast<int>(spec.steps.size()))) {
    return fail(Code::kCorruption, run_spec_path(run_dir) + ": first_step " + std::to_string(spec.first_step) +
                                       " is not one of its " + std::to_string(spec.steps.size()) + " steps");
  }
  return spec;
}

namespace {

std::string exit_record_json(const ExitRecord& r) {
  json j = {{"exit_code", r.exit_code ? json(*r.exit_code) : json(nullptr)},
            {"signal", r.signal ? json(*r.signal) : json(nullptr)},
            {"started_at_ms", r.started_at_ms},
            {"ended_at_ms", r.ended_at_ms},
            {"stop_requested", r.stop_requested},
            {"leftovers_killed", r.leftovers_killed},
            {"job_pid", r.job_pid},
            {"error", r.error},
            {"disk_full", r.disk_full},
            {"log_dropped_bytes", r.log_dropped_bytes},
            {"released", r.released}};
  if (!r.claim_lapsed.empty()) j["claim_lapsed"] = r.claim_lapsed;
  if (!r.steps.empty()) j["steps"] = steps_to_json(r.steps);
  return j.dump();
}

}  // namespace

Status write_exit_record(const std::string& run_dir, const ExitRecord& r) {
  return os::write_file_atomic(exit_record_path(run_dir), exit_record_json(r));
}

Status write_exit_record_at(int run_dir_fd, const ExitRecord& r) {
  return os::write_file_atomic_at(run_dir_fd, "exit.json", exit_record_json(r));
}

Result<ExitRecord> read_exit_record(const std::string& run_dir) {
  std::string path = exit_record_path(run_dir);
  auto text = read_record(path, kMaxRecordBytes);
  if (!text) return tl::unexpected(text.error());  // kNotFound when there is none
  json j = json::parse(*text, nullptr, false);
  ExitRecord r;
  try {
    if (!j.at("exit_code").is_null()) r.exit_code = j.at("exit_code").get<int>();
    if (!j.at("signal").is_null()) r.signal = j.at("signal").get<int>();
    r.started_at_ms = j.at("started_at_ms").get<int64_t>();
    r.ended_at_ms = j.at("ended_at_ms").get<int64_t>();
    r.stop_requested = j.at("stop_requested").get<bool>();
    r.leftovers_killed = j.at("leftovers_killed").get<int>();
    r.job_pid = j.value("job_pid", 0);
    r.error = j.at("error").get<std::string>();
    r.disk_full = j.value("disk_full", false);
    r.log_dropped_bytes = j.value("log_dropped_bytes", int64_t{0});
    r.released = j.value("released", true);
    r.claim_lapsed = j.value("claim_lapsed", std::string());
    if (j.contains("steps")) {
      auto steps = steps_from_json(j["steps"], path);
      if (!steps) return tl::unexpected(steps.error());
      r.steps = std::move(*steps);
    }
  } catch (const json::exception& e) {
    return fail(Code::kCorruption, path + ": " + e.what());
  }
  return r;
}

Status write_step_record(const std::string& run_dir, const std::vector<StepRun>& steps) {
  return os::write_file_atomic(steps_path(run_dir), json{{"steps", steps_to_json(steps)}}.dump());
}

Status write_step_record_at(int run_dir_fd, const std::vector<StepRun>& steps) {
  return os::write_file_atomic_at(run_dir_fd, "steps.json", json{{"steps", steps_to_json(steps)}}.dump());
}

Result<std::vector<StepRun>> read_step_record(const std::string& run_dir) {
  std::string path = steps_path(run_dir);
  auto text = read_record(path, kMaxRecordBytes);
  if (!text) return tl::unexpected(text.error());
  json j = json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("steps")) return fail(Code::kCorruption, path + ": not a step record");
  return steps_from_json(j["steps"], path);
}

}  // namespace gpuq::runner
