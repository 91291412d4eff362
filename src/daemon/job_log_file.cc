// SPDX-License-Identifier: Apache-2.0
#include "daemon/job_log_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "os/safe_open.h"

namespace gpuq::daemon {

JobLogFile JobLogFile::open(const HomeLayout& layout, int64_t job_id, int run_number) {
  std::string relative = run_number == 0 ? fmt::format("{}/pull.log", job_id)
                                         : fmt::format("{}/run-{}/output.log", job_id, run_number);
  os::BeneathOptions options;
  options.regular_file = true;
  auto fd = os::open_beneath(layout.jobs_dir(), relative, O_RDONLY, 0, options);
  return JobLogFile(fd ? *fd : -1);
}

JobLogFile::JobLogFile(int fd) : fd_(fd) {
  struct stat st {};
  if (fd_ >= 0 && ::fstat(fd_, &st) == 0) size_ = static_cast<int64_t>(st.st_size);
}

JobLogFile::~JobLogFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::string JobLogFile::read(int64_t offset, int64_t count) const {
  if (fd_ < 0 || count <= 0) return "";
  std::string text(static_cast<size_t>(count), '\0');
  size_t done = 0;
  while (done < text.size()) {
    ssize_t got = ::pread(fd_, text.data() + done, text.size() - done, offset + static_cast<int64_t>(done));
    if (got <= 0) break;
    done += static_cast<size_t>(got);
  }
  text.resize(done);
  return text;
}

}  // namespace gpuq::daemon
