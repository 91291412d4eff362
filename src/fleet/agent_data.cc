// Declared data and logs: `# gpuq-in:` paths pulled from the data store before a run starts,
// `# gpuq-out:` paths (globs in the last component) pushed while it runs and at its end, and
// the log of each attempt. Paths are relative to the node's [fleet] workdir and mirrored under
// the data prefix.
#include <filesystem>
#include <fmt/format.h>
#include <fnmatch.h>
#include <sys/stat.h>

#include "fleet/agent.h"
#include "os/process.h"

namespace gpuq::fleet {

namespace fs = std::filesystem;

namespace {

// A declared path must stay inside the workdir: relative, no "." or ".." segment, and a valid
// key once under the data prefix.
Status check_data_path(std::string_view path, const std::string& prefix) {
  if (auto valid = check_key(prefix + std::string(path)); !valid || path.empty() || path.front() == '/') {
    return fail(Code::kInvalidArgument,
                fmt::format("declared path '{}' must be relative to the workdir, inside it, and made of "
                            "[A-Za-z0-9._-/]",
                            clip_for_message(path)));
  }
  return ok();
}

bool has_glob(std::string_view name) { return name.find_first_of("*?[") != std::string_view::npos; }

Status write_input(const fs::path& target, const std::string& body) {
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  if (ec) return fail(Code::kIoError, fmt::format("cannot create {}: {}", target.parent_path().string(), ec.message()));
  return os::write_file_atomic(target.string(), body, false);
}

}  // namespace

Status Agent::pull_inputs(Held& held, int64_t wall) {
  // Between objects: every held claim that is due is renewed, this one included.
  auto keep_claim = [&]() -> Status {
    keep_leases(wall);
    if (held.lost || !lease_fresh(held, now())) {
      return fail(Code::kConflict, "the claim could not be kept while its inputs were pulled");
    }
    return ok();
  };
  const FleetJob& job = held.job;
  for (const auto& path : job.spec.inputs) {
    if (auto kept = keep_claim(); !kept) return kept;
    if (auto valid = check_data_path(path, options_.data_prefix); !valid) return valid;
    std::string key = options_.data_prefix + path;
    fs::path target = fs::path(options_.workdir) / path;
    auto object = data_->get(key);
    if (object) {
      if (auto written = write_input(target, object->body); !written) {
        return fail(Code::kIoError, fmt::format("input {}: {}", path, written.error().message));
      }
      continue;
    }
    if (object.error().code != Code::kNotFound) {
      return fail(Code::kUnavailable, fmt::format("input {} could not be pulled: {}", path, object.error().message));
    }
    // Not an object: a directory of them?
    auto listing = data_->list(key + "/");
    if (!listing) return fail(Code::kUnavailable, fmt::format("input {} could not be listed: {}", path, listing.error().message));
    if (listing->objects.empty()) {
      return fail(Code::kNotFound, fmt::format("input {} is not in the data store ({} in {}); push it first",
                                               path, key, data_->describe()));
    }
    for (const auto& info : listing->objects) {
      if (auto kept = keep_claim(); !kept) return kept;
      auto item = data_->get(info.key);
      if (!item) return fail(Code::kUnavailable, fmt::format("input {} could not be pulled: {}", info.key, item.error().message));
      std::string rel = info.key.substr(options_.data_prefix.size());
      if (auto valid = check_data_path(rel, options_.data_prefix); !valid) return valid;
      if (auto written = write_input(fs::path(options_.workdir) / rel, item->body); !written) {
        return fail(Code::kIoError, fmt::format("input {}: {}", rel, written.error().message));
      }
    }
  }
  return ok();
}

std::string Agent::push_outputs(Held& held, int64_t wall) {
  if (data_ == nullptr) return "";
  std::vector<std::string> problems;
  fs::path workdir(options_.workdir);
  for (const auto& pattern : held.job.spec.outputs) {
    if (auto valid = check_data_path(pattern, options_.data_prefix); !valid && !has_glob(pattern)) {
      problems.push_back(valid.error().message);
      continue;
    }
    fs::path declared(pattern);
    std::string name = declared.filename().string();
    fs::path dir = workdir / declared.parent_path();
    std::vector<fs::path> matches;
    std::error_code ec;
    if (has_glob(name)) {
      for (const auto& entry : fs::directory_iterator(dir, ec)) {
        if (::fnmatch(name.c_str(), entry.path().filename().c_str(), FNM_PERIOD) == 0) matches.push_back(entry.path());
      }
    } else if (fs::exists(dir / name, ec)) {
      matches.push_back(dir / name);
    }
    std::vector<fs::path> files;
    for (const auto& match : matches) {
      if (fs::is_directory(match, ec)) {
        for (const auto& entry : fs::recursive_directory_iterator(match, ec)) {
          if (entry.is_regular_file(ec)) files.push_back(entry.path());
        }
      } else if (fs::is_regular_file(match, ec)) {
        files.push_back(match);
      }
    }
    if (files.empty()) {
      problems.push_back(fmt::format("output {} matched nothing", pattern));
      continue;
    }
    for (const auto& file : files) {
      std::string rel = fs::relative(file, workdir, ec).string();
      struct stat st {};
      if (ec || ::stat(file.c_str(), &st) != 0) continue;
      std::pair<int64_t, int64_t> seen{st.st_size, st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec};
      if (held.pushed[rel] == seen) continue;
      if (auto valid = check_data_path(rel, options_.data_prefix); !valid) {
        problems.push_back(valid.error().message);
        continue;
      }
      keep_leases(wall);
      auto content = os::read_file(file.string());
      if (!content) continue;
      if (data_->put(options_.data_prefix + rel, *content)) held.pushed[rel] = seen;
    }
  }
  std::string note;
  for (const auto& problem : problems) note += (note.empty() ? "" : "; ") + problem;
  return note;
}

void Agent::push_log(Held& held, const LocalJob& local) {
  std::string log;
  for (size_t i = 0; i < local.logs.size(); ++i) {
    auto text = os::read_file(local.logs[i]);
    if (local.logs.size() > 1) log += fmt::format("=== run {} ===\n", i + 1);
    if (text) log += *text;
  }
  if (log.size() > options_.max_log_bytes) {
    log = fmt::format("[the first {} bytes are left out: the fleet keeps the last {}]\n",
                      log.size() - options_.max_log_bytes, options_.max_log_bytes) +
          log.substr(log.size() - options_.max_log_bytes);
  }
  if (log.size() == held.log_pushed_bytes && held.log_pushed_bytes > 0) return;
  if (store_.put(keys::log(held.job.id, held.claim.attempt), log)) held.log_pushed_bytes = log.size();
}

}  // namespace gpuq::fleet
