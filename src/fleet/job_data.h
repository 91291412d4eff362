// SPDX-License-Identifier: Apache-2.0
// A fleet job's declared data as it moves: the work a transfer worker does for a pull (inputs,
// and the outputs of earlier attempts when a reclaimed job resumes) and for a push (the
// outputs that changed), and the record of every output pushed, jobs/ID/outputs.json, which
// `gpuq fleet show` lists and a resuming node pulls from (docs/fleet.md, "Declared data",
// "Resume elsewhere"). Paths are relative to the node's workdir and mirrored under the data
// prefix. The works run on a TransferQueue's worker; the agent reads their results once `done`
// is set (release/acquire), and may set `cancelled` (the claim was lost) to stop them between
// files. Thread rules: as said; the record's functions are pure.
#pragma once

#include <atomic>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "fleet/object_store.h"

namespace gpuq::fleet {

// States of an output in the record.
inline constexpr const char* kOutputPushed = "pushed";          // the store has this version
inline constexpr const char* kOutputFailing = "failing";        // the last push failed; retried
inline constexpr const char* kOutputNotPushed = "not_pushed";   // the job ended without it

// One output in jobs/ID/outputs.json.
struct OutputRecord {
  std::string path;        // relative to the workdir
  int64_t size = 0;        // of the version in the store (or, while failing, on the node)
  std::string etag;        // in the data store; "" when never pushed
  int64_t pushed_ms = 0;   // when the version in the store landed (the holder's clock); 0: never
  int attempt = 0;         // the attempt that pushed (or failed to push) it
  std::string node;
  std::string state = kOutputPushed;
  std::string error;       // the last failure, while failing or not pushed
  int failures = 0;        // pushes in a row that failed
  // The pushed file's mtime on its node: a restarted daemon that takes its runs back does not
  // push an unchanged output again.
  int64_t mtime_ns = 0;
};
nlohmann::json outputs_to_json(const std::vector<OutputRecord>& outputs);
// The record's body (an object {"outputs": [...]}); kCorruption names what is wrong.
Result<std::vector<OutputRecord>> outputs_from_json(const nlohmann::json& json);

// Whether `path` may be declared: relative, inside the workdir, made of the key alphabet. A
// declared path may end in '/' (a directory, moved whole: DeclaredPath): check its `path`.
Status check_data_path(std::string_view path, const std::string& data_prefix);

// A `# gpuq-in:` or `# gpuq-out:` path as written: "ckpt/" is the directory ckpt, moved whole
// (pulled as the "folder" of objects under it, pushed as every file beneath it); "ckpt" is
// whatever is there, a file or a directory.
struct DeclaredPath {
  std::string path;        // without the trailing '/'s
  bool directory = false;  // it was written with a trailing '/'
};
DeclaredPath declared_path(std::string_view written);

struct PullWork {
  std::string workdir;
  std::string data_prefix;
  std::vector<std::string> inputs;   // declared: an object, or a "folder" of objects
  std::vector<std::string> resume;   // outputs of earlier attempts: exact paths
};
struct PullState {
  std::atomic<bool> done{false};
  std::atomic<bool> cancelled{false};
  Status status = ok();  // the first input that failed, and why (kUnavailable: may pass)
  int resumed = 0;       // outputs of earlier attempts pulled
  int64_t bytes = 0;
};
// Pulls `work`'s inputs, then its resumed outputs, each with get_file (streamed, checked,
// renamed into place). Sets state.done last.
void run_pull(ObjectStore& data, const PullWork& work, PullState& state);

struct PushItem {
  std::string rel;          // relative to the workdir
  std::string path;         // absolute
  int64_t size = 0;         // as seen when the push was planned
  int64_t mtime_ns = 0;
  // Results.
  bool pushed = false;
  std::string etag;
  int64_t pushed_size = 0;
  int64_t pushed_ms = 0;
  std::string error;
};
struct PushState {
  std::atomic<bool> done{false};
  std::atomic<bool> cancelled{false};
  std::vector<PushItem> items;
};
// Pushes each item with put_file (streamed; multipart above the part size); a failure is
// recorded in its item and the next item is tried. Sets state.done last.
void run_push(ObjectStore& data, const std::string& data_prefix, PushState& state);

}  // namespace gpuq::fleet
