// SPDX-License-Identifier: Apache-2.0
// A job's log as readers outside the daemon's actor read it (the API's GET /v1/jobs/{id}/log):
// a run's output.log, or for run 0 the image pull's pull.log, opened beneath the jobs directory
// with no link followed (os/safe_open.h). On a shared box (docs/lab.md) the log and the
// directories above it belong to the job's user, who could leave a link there to a file only the
// daemon may read; such a log, or one that is not a plain file, reads as absent. Reads use the
// fd opened once. Not thread-safe per object; separate objects are independent.
#pragma once

#include <cstdint>
#include <string>

#include "base/paths.h"

namespace gpuq::daemon {

class JobLogFile {
 public:
  // Run `run_number`'s output.log of job `job_id`; run 0 is the job's pull.log.
  static JobLogFile open(const HomeLayout& layout, int64_t job_id, int run_number);

  JobLogFile(JobLogFile&& other) noexcept : fd_(other.fd_), size_(other.size_) { other.fd_ = -1; }
  JobLogFile& operator=(JobLogFile&&) = delete;
  JobLogFile(const JobLogFile&) = delete;
  ~JobLogFile();

  bool found() const { return fd_ >= 0; }
  int64_t size() const { return size_; }  // when opened; 0 when not found
  // Up to `count` bytes from `offset` (fewer at the end of the file); "" when not found.
  std::string read(int64_t offset, int64_t count) const;

 private:
  explicit JobLogFile(int fd);
  int fd_ = -1;
  int64_t size_ = 0;
};

}  // namespace gpuq::daemon
