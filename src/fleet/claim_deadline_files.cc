// SPDX-License-Identifier: Apache-2.0
#include "fleet/claim_deadline_files.h"

#include <unistd.h>

#include <fmt/format.h>

#include "model/claim_deadline.h"
#include "os/process.h"

namespace gpuq::fleet {
namespace {

// A fleet id as a file name, one to one: ids come from the bucket, so anything but letters,
// digits, '_' and '-' is escaped (a '.' too: no name can be "..").
std::string file_name_of(const std::string& fleet_id) {
  std::string name;
  for (unsigned char c : fleet_id) {
    if (std::isalnum(c) || c == '_' || c == '-') {
      name.push_back(static_cast<char>(c));
    } else {
      name += fmt::format("%{:02X}", c);
    }
  }
  return name;
}

}  // namespace

std::string ClaimDeadlineFiles::path(const std::string& fleet_id, int attempt) const {
  if (!enabled()) return "";
  return fmt::format("{}/{}.{}.deadline", dir_, file_name_of(fleet_id), attempt);
}

Status ClaimDeadlineFiles::renewed(const std::string& fleet_id, int attempt, int64_t renewed_mono) const {
  if (!enabled()) return ok();
  if (auto made = os::make_dirs(dir_); !made) return made;
  return os::write_file_atomic(path(fleet_id, attempt),
                               encode_claim_deadline(claim_deadline_after_renewal(renewed_mono, lease_ms_)),
                               /*durable=*/false);
}

void ClaimDeadlineFiles::forget(const std::string& fleet_id, int attempt) const {
  if (enabled()) ::unlink(path(fleet_id, attempt).c_str());
}

}  // namespace gpuq::fleet
