// SPDX-License-Identifier: Apache-2.0
#include "daemon/user_limits.h"

#include <fmt/format.h>

namespace gpuq::daemon {

Status check_max_queued(const UserUsage& users, const std::string& user, int64_t adding) {
  if (user.empty() || adding <= 0) return ok();
  const std::optional<int64_t> limit = users.limits_of(user).max_queued;
  if (!limit) return ok();
  const int64_t queued = users.unfinished(user);
  if (queued + adding <= *limit) return ok();
  const bool own = users.settings().per_user.count(user) != 0 &&
                   users.settings().per_user.at(user).max_queued.has_value();
  return fail(Code::kResourceExhausted,
              fmt::format("user limit: {} has {} of {} queued jobs (max_queued in [{}]){}; wait "
                          "for some to finish or ask an admin",
                          user, queued, *limit, own ? "users." + user : "users",
                          adding == 1 ? "" : fmt::format(", and this adds {}", adding)));
}

}  // namespace gpuq::daemon
