// SPDX-License-Identifier: Apache-2.0
// Changes to files, as the queue actor learns of them: a running job's steps.json, rewritten
// by its shim at each step's start and end (runner/run_files.h). One inotify instance on the
// actor's io_context watches the directories of the watched files for a file written or moved
// into place; each change of a watched file's name calls its callback on the actor's thread.
// Several changes close together may come as one call: a callback reads the file, it is not
// told what changed. A watch ends when its handle is dropped.
// Thread rules: actor thread only; the io_context must outlive it.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "base/asio.h"
#include "base/status.h"
#include "daemon/world.h"

namespace gpuq::daemon {

class FileWatcher {
 public:
  explicit FileWatcher(boost::asio::io_context& actor);
  ~FileWatcher();
  FileWatcher(const FileWatcher&) = delete;
  FileWatcher& operator=(const FileWatcher&) = delete;

  // Calls `changed` each time `path` is written (closed after a write) or moved into place.
  // Fails when its directory cannot be watched (gone, or no inotify watches left).
  Result<std::unique_ptr<FileWatch>> watch(const std::string& path, std::function<void()> changed);

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace gpuq::daemon
