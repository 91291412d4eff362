// SPDX-License-Identifier: Apache-2.0
#include "fleet/job_data.h"

#include <fmt/format.h>

#include <filesystem>

#include "base/time.h"

namespace gpuq::fleet {

namespace fs = std::filesystem;

nlohmann::json outputs_to_json(const std::vector<OutputRecord>& outputs) {
  nlohmann::json list = nlohmann::json::array();
  for (const OutputRecord& o : outputs) {
    nlohmann::json item = {{"path", o.path},   {"size", o.size},       {"etag", o.etag},
                           {"pushed_ms", o.pushed_ms}, {"attempt", o.attempt}, {"node", o.node},
                           {"state", o.state}};
    if (!o.error.empty()) item["error"] = o.error;
    if (o.failures > 0) item["failures"] = o.failures;
    if (o.mtime_ns > 0) item["mtime_ns"] = o.mtime_ns;
    list.push_back(std::move(item));
  }
  return {{"outputs", std::move(list)}};
}

Result<std::vector<OutputRecord>> outputs_from_json(const nlohmann::json& json) {
  if (!json.is_object() || !json.contains("outputs") || !json["outputs"].is_array()) {
    return fail(Code::kCorruption, "an output record must be an object with an \"outputs\" list");
  }
  std::vector<OutputRecord> outputs;
  try {
    for (const auto& item : json["outputs"]) {
      OutputRecord o;
      o.path = item.at("path").get<std::string>();
      o.size = item.value("size", int64_t{0});
      o.etag = item.value("etag", "");
      o.pushed_ms = item.value("pushed_ms", int64_t{0});
      o.attempt = item.value("attempt", 0);
      o.node = item.value("node", "");
      o.state = item.value("state", std::string(kOutputPushed));
      o.error = item.value("error", "");
      o.failures = item.value("failures", 0);
      o.mtime_ns = item.value("mtime_ns", int64_t{0});
      outputs.push_back(std::move(o));
    }
  } catch (const nlohmann::json::exception& e) {
    return fail(Code::kCorruption, fmt::format("an output in the record is malformed: {}", e.what()));
  }
  return outputs;
}

Status check_data_path(std::string_view path, const std::string& data_prefix) {
  if (auto valid = check_key(data_prefix + std::string(path)); !valid || path.empty() || path.front() == '/') {
    return fail(Code::kInvalidArgument,
                fmt::format("declared path '{}' must be relative to the workdir, inside it, and made of "
                            "[A-Za-z0-9._-/]",
                            clip_for_message(path)));
  }
  return ok();
}

DeclaredPath declared_path(std::string_view written) {
  DeclaredPath declared;
  while (written.size() > 1 && written.back() == '/') {
    written.remove_suffix(1);
    declared.directory = true;
  }
  declared.path = std::string(written);
  return declared;
}

namespace {

// One input: an object, else a "folder" of them (only the folder for "PATH/"). kNotFound when
// it is neither.
Status pull_input(ObjectStore& data, const PullWork& work, const std::string& written, PullState& state) {
  const DeclaredPath declared = declared_path(written);
  const std::string& path = declared.path;
  if (auto valid = check_data_path(path, work.data_prefix); !valid) return valid;
  const std::string key = work.data_prefix + path;
  if (!declared.directory) {
    auto got = data.get_file(key, (fs::path(work.workdir) / path).string());
    if (got) {
      state.bytes += got->size;
      return ok();
    }
    if (got.error().code != Code::kNotFound) {
      return fail(got.error().code == Code::kInvalidArgument ? Code::kInvalidArgument : Code::kUnavailable,
                  fmt::format("input {} could not be pulled: {}", path, got.error().message));
    }
  }
  auto listing = data.list(key + "/");
  if (!listing) return fail(Code::kUnavailable, fmt::format("input {} could not be listed: {}", path, listing.error().message));
  if (listing->objects.empty()) {
    return fail(Code::kNotFound, fmt::format("input {} is not in the data store ({}{} in {}); push it first",
                                             written, key, declared.directory ? "/" : "", data.describe()));
  }
  for (const auto& info : listing->objects) {
    if (state.cancelled) return fail(Code::kConflict, "the claim was lost");
    std::string rel = info.key.substr(work.data_prefix.size());
    if (auto valid = check_data_path(rel, work.data_prefix); !valid) return valid;
    auto item = data.get_file(info.key, (fs::path(work.workdir) / rel).string());
    if (!item) return fail(Code::kUnavailable, fmt::format("input {} could not be pulled: {}", info.key, item.error().message));
    state.bytes += item->size;
  }
  return ok();
}

}  // namespace

void run_pull(ObjectStore& data, const PullWork& work, PullState& state) {
  state.status = [&]() -> Status {
    for (const auto& path : work.inputs) {
      if (state.cancelled) return fail(Code::kConflict, "the claim was lost");
      if (auto pulled = pull_input(data, work, path, state); !pulled) return pulled;
    }
    for (const auto& path : work.resume) {
      if (state.cancelled) return fail(Code::kConflict, "the claim was lost");
      if (auto valid = check_data_path(path, work.data_prefix); !valid) return valid;
      auto got = data.get_file(work.data_prefix + path, (fs::path(work.workdir) / path).string());
      if (!got) {
        // An output recorded as pushed and now gone was removed by someone: resume without it.
        if (got.error().code == Code::kNotFound) continue;
        return fail(Code::kUnavailable, fmt::format("output {} of an earlier attempt could not be pulled: {}",
                                                    path, got.error().message));
      }
      state.bytes += got->size;
      ++state.resumed;
    }
    return ok();
  }();
  state.done.store(true, std::memory_order_release);
}

void run_push(ObjectStore& data, const std::string& data_prefix, PushState& state) {
  for (PushItem& item : state.items) {
    if (state.cancelled) {
      item.error = "not pushed: the claim was lost";
      continue;
    }
    auto pushed = data.put_file(data_prefix + item.rel, item.path);
    if (!pushed) {
      item.error = pushed.error().message;
      continue;
    }
    item.pushed = true;
    item.etag = pushed->etag;
    item.pushed_size = pushed->size;
    item.pushed_ms = wall_now_ms();
  }
  state.done.store(true, std::memory_order_release);
}

}  // namespace gpuq::fleet
