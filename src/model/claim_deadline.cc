// SPDX-License-Identifier: Apache-2.0
#include "model/claim_deadline.h"

#include <nlohmann/json.hpp>

#include "model/spec_json.h"

namespace gpuq {

ClaimDeadline claim_deadline_after_renewal(int64_t renewed_boot_ms, int64_t lease_ms) {
  return {renewed_boot_ms + lease_ms / 2, renewed_boot_ms + lease_ms * 3 / 4};
}

std::string encode_claim_deadline(const ClaimDeadline& deadline) {
  return nlohmann::json{{"stop_at_boot_ms", deadline.stop_at_boot_ms},
                        {"kill_by_boot_ms", deadline.kill_by_boot_ms}}
      .dump();
}

Result<ClaimDeadline> parse_claim_deadline(std::string_view text) {
  auto doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_object()) return fail(Code::kCorruption, "not a claim deadline (a JSON object)");
  auto stop_at = json_int64(doc.value("stop_at_boot_ms", nlohmann::json()));
  auto kill_by = json_int64(doc.value("kill_by_boot_ms", nlohmann::json()));
  if (!stop_at || !kill_by) {
    return fail(Code::kCorruption, "a claim deadline needs integers stop_at_boot_ms and kill_by_boot_ms");
  }
  return ClaimDeadline{*stop_at, *kill_by};
}

}  // namespace gpuq
