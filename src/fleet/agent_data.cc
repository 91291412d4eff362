// SPDX-License-Identifier: Apache-2.0
// Declared data and logs: `# gpuq-in:` paths pulled from the data store before a run starts
// (with the outputs of earlier attempts when a reclaimed job resumes), `# gpuq-out:` paths
// (globs in the last component) pushed while it runs and at its end, and the log of each
// attempt. Pulls and pushes run on the transfer queue (transfer_queue.h), never on the agent's
// thread; here they are planned and their results taken in. Paths are relative to the node's
// [fleet] workdir and mirrored under the data prefix.
#include <filesystem>
#include <fmt/format.h>
#include <fnmatch.h>
#include <sys/stat.h>

#include "fleet/agent.h"
#include "fleet/log_tail.h"
#include "os/process.h"

namespace gpuq::fleet {

namespace fs = std::filesystem;

namespace {

bool has_glob(std::string_view name) { return name.find_first_of("*?[") != std::string_view::npos; }

// The wait before an output that failed is pushed again: `first_ms` (the sync interval, at
// most 5 s), doubling, at most 5 min.
int64_t output_retry_ms(int failures, int64_t first_ms) {
  first_ms = std::clamp<int64_t>(first_ms, 1, 5'000);
  return std::min<int64_t>(first_ms << std::clamp(failures - 1, 0, 10), 300'000);
}

// At a job's end its outputs get this many rounds of pushes before the end is published
// without the ones that still fail.
constexpr int kEndPushRounds = 4;

}  // namespace

Status Agent::begin_pull(Held& held) {
  if (held.pull) return ok();
  PullWork work{options_.workdir, options_.data_prefix, held.job.spec.inputs, {}};
  // A reclaimed job resumes from what its earlier attempts pushed (`# gpuq-resume: no` turns it off).
  if (held.claim.attempt > 1 && held.job.spec.resume && !held.job.spec.outputs.empty()) {
    auto record = read_output_record(held.job.id);
    if (!record) return fail(Code::kUnavailable, record.error().message);
    for (const OutputRecord& o : *record) {
      if (!o.etag.empty()) work.resume.push_back(o.path);
      held.outputs[o.path].record = o;
    }
    held.resuming = !work.resume.empty();  // GPUQ_RESUME=1 only with something to go on from
  }
  held.pull = std::make_shared<PullState>();
  transfers_->submit([state = held.pull, work = std::move(work)](ObjectStore& data) { run_pull(data, work, *state); });
  return ok();
}

Result<std::vector<OutputRecord>> Agent::read_output_record(const std::string& id) {
  auto object = store_.get(keys::outputs(id));
  if (!object) {
    if (object.error().code == Code::kNotFound) return std::vector<OutputRecord>{};
    return tl::unexpected(object.error());
  }
  auto json = parse_object(keys::outputs(id), object->body);
  auto outputs = json ? outputs_from_json(*json) : Result<std::vector<OutputRecord>>(tl::unexpected(json.error()));
  if (!outputs) {
    // Resumed from nothing rather than never started, and said so.
    executor_.event("job.outputs_unreadable", std::nullopt,
                    {{"fleet_id", id}, {"key", keys::outputs(id)}, {"error", outputs.error().message}});
    return std::vector<OutputRecord>{};
  }
  return *outputs;
}

void Agent::note_pulled_outputs(Held& held) {
  for (auto& [rel, local] : held.outputs) {
    if (local.record.etag.empty()) continue;
    struct stat st {};
    if (::stat((fs::path(options_.workdir) / rel).c_str(), &st) != 0 || st.st_size != local.record.size) continue;
    local.pushed_size = st.st_size;
    local.pushed_mtime_ns = st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec;
  }
}

std::vector<fs::path> Agent::declared_files(const Held& held, std::vector<std::string>& problems) const {
  fs::path workdir(options_.workdir);
  std::vector<fs::path> files;
  for (const auto& written : held.job.spec.outputs) {
    const DeclaredPath declared = declared_path(written);
    const std::string& pattern = declared.path;
    if (auto valid = check_data_path(pattern, options_.data_prefix); !valid && !has_glob(pattern)) {
      problems.push_back(valid.error().message);
      continue;
    }
    fs::path path(pattern);
    std::string name = path.filename().string();
    fs::path dir = workdir / path.parent_path();
    std::vector<fs::path> matches;
    std::error_code ec;
    if (has_glob(name)) {
      for (const auto& entry : fs::directory_iterator(dir, ec)) {
        if (::fnmatch(name.c_str(), entry.path().filename().c_str(), FNM_PERIOD) == 0) matches.push_back(entry.path());
      }
    } else if (fs::exists(dir / name, ec)) {
      matches.push_back(dir / name);
    }
    if (declared.directory) {  // "ckpt/": only a directory (and everything beneath it)
      std::erase_if(matches, [](const fs::path& match) {
        std::error_code ignored;
        return !fs::is_directory(match, ignored);
      });
    }
    size_t before = files.size();
    for (const auto& match : matches) {
      if (fs::is_directory(match, ec)) {
        for (const auto& entry : fs::recursive_directory_iterator(match, ec)) {
          // Partial downloads (".NAME.gpuq-partial-...") are never outputs.
          if (entry.is_regular_file(ec) && entry.path().filename().string().find(".gpuq-partial-") == std::string::npos) {
            files.push_back(entry.path());
          }
        }
      } else if (fs::is_regular_file(match, ec)) {
        files.push_back(match);
      }
    }
    if (files.size() == before) {
      problems.push_back(fmt::format("output {} matched nothing{}", written,
                                     declared.directory ? " (a path ending in / is a directory)" : ""));
    }
  }
  return files;
}

std::string Agent::begin_push(Held& held, bool at_end) {
  if (data_ == nullptr || held.push) return "";
  std::vector<std::string> problems;
  std::vector<fs::path> files = declared_files(held, problems);
  auto state = std::make_shared<PushState>();
  const int64_t at = now();
  for (const auto& file : files) {
    std::error_code ec;
    std::string rel = fs::relative(file, options_.workdir, ec).string();
    struct stat st {};
    if (ec || ::stat(file.c_str(), &st) != 0) continue;  // gone since it was matched
    const int64_t mtime_ns = st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec;
    LocalOutput& local = held.outputs[rel];
    if (local.pushed_size == st.st_size && local.pushed_mtime_ns == mtime_ns) continue;  // unchanged
    if (!at_end && at < local.next_try_mono) continue;  // failed lately: its backoff
    if (auto valid = check_data_path(rel, options_.data_prefix); !valid) {
      problems.push_back(valid.error().message);
      continue;
    }
    PushItem item;
    item.rel = rel;
    item.path = file.string();
    item.size = st.st_size;
    item.mtime_ns = mtime_ns;
    state->items.push_back(std::move(item));
  }
  if (!state->items.empty()) {
    held.push = state;
    transfers_->submit([state, prefix = options_.data_prefix](ObjectStore& data) { run_push(data, prefix, *state); });
  }
  std::string note;
  for (const auto& problem : problems) note += (note.empty() ? "" : "; ") + problem;
  return note;
}

bool Agent::take_push(Held& held) {
  if (!held.push || !held.push->done.load(std::memory_order_acquire)) return false;
  const int64_t at = now();
  for (const PushItem& item : held.push->items) {
    LocalOutput& local = held.outputs[item.rel];
    OutputRecord& record = local.record;
    record.path = item.rel;
    record.attempt = held.claim.attempt;
    record.node = options_.node;
    if (item.pushed) {
      local.pushed_size = item.size;
      local.pushed_mtime_ns = item.mtime_ns;
      local.next_try_mono = 0;
      record.size = item.pushed_size;
      record.etag = item.etag;
      record.pushed_ms = item.pushed_ms;
      record.mtime_ns = item.mtime_ns;
      record.state = kOutputPushed;
      record.error.clear();
      record.failures = 0;
      continue;
    }
    record.state = kOutputFailing;
    record.error = item.error;
    record.failures += 1;
    if (record.etag.empty()) record.size = item.size;  // never pushed: the size on the node
    local.next_try_mono = at + output_retry_ms(record.failures, options_.sync_every_ms);
    event("job.output_failed", &held,
          {{"fleet_id", held.job.id}, {"path", item.rel}, {"error", item.error}, {"failures", record.failures}});
  }
  held.push.reset();
  // While an output fails, the job's reason says so (published with the next renewal).
  std::string reason;
  for (const auto& [rel, local] : held.outputs) {
    if (local.record.state != kOutputFailing) continue;
    reason += fmt::format("{}output {} could not be pushed ({} tries): {}", reason.empty() ? "" : "; ", rel,
                          local.record.failures, local.record.error);
  }
  held.claim.reason = reason;
  write_output_record(held);
  return true;
}

void Agent::write_output_record(Held& held) {
  if (held.lost) return;
  std::vector<OutputRecord> records;
  for (const auto& [rel, local] : held.outputs) {
    if (!local.record.path.empty()) records.push_back(local.record);
  }
  if (records.empty()) return;
  (void)store_.put(keys::outputs(held.job.id), outputs_to_json(records).dump());
}

std::string Agent::outputs_not_pushed(Held& held) {
  std::string note;
  for (auto& [rel, local] : held.outputs) {
    if (local.record.state != kOutputFailing) continue;
    local.record.state = kOutputNotPushed;
    note += fmt::format("{}output {} was not pushed: {}", note.empty() ? "" : "; ", rel, local.record.error);
  }
  if (!note.empty()) write_output_record(held);
  return note;
}

bool Agent::push_at_end(Held& held) {
  while (true) {
    take_push(held);
    if (held.push) return false;  // in flight: looked at again when it is done
    bool failing = false;
    for (const auto& [rel, local] : held.outputs) failing |= local.record.state == kOutputFailing;
    if (held.end_push_rounds > 0 && (!failing || held.end_push_rounds >= kEndPushRounds)) return true;
    if (held.end_push_rounds > 0 && now() < held.next_end_push_mono) return false;
    held.end_note = begin_push(held, true);
    ++held.end_push_rounds;
    held.next_end_push_mono = now() + output_retry_ms(held.end_push_rounds, options_.sync_every_ms);
  }
}

bool Agent::push_log(Held& held, const LocalJob& local) {
  // A local job with no logs (not started, or gone from the daemon) has nothing to publish: an
  // empty log must not replace what was published while it ran.
  if (local.logs.empty()) return true;
  // Nothing written since the last push: nothing read. (The size of the whole log, not of what
  // is kept of it: a log past max_log_bytes keeps one size while its tail moves on.)
  const uint64_t size = log_size(local.logs);
  if (size == held.log_pushed_bytes && held.log_pushed_bytes > 0) return true;
  if (!store_.put(keys::log(held.job.id, held.claim.attempt), log_tail(local.logs, options_.max_log_bytes)))
    return false;
  held.log_pushed_bytes = size;
  return true;
}

bool Agent::push_log_at_end(Held& held, const LocalJob& local, int64_t mono) {
  if (held.end_log_done) return true;
  if (held.end_log_failures > 0 && mono < held.next_end_log_mono) return false;
  if (push_log(held, local)) {
    held.end_log_done = true;
    return true;
  }
  if (++held.end_log_failures >= kEndPushRounds) {
    held.end_log_done = true;
    held.end_log_note = fmt::format(
        "its log's last part could not be published ({} tries): the fleet's copy stops at what "
        "was pushed while it ran",
        held.end_log_failures);
    return true;
  }
  held.next_end_log_mono = mono + output_retry_ms(held.end_log_failures, options_.sync_every_ms);
  return false;
}

}  // namespace gpuq::fleet
