// SPDX-License-Identifier: Apache-2.0
// max_queued ([users] in config.toml, docs/lab.md): a submit, plan or sweep that would give its
// user more unfinished jobs (pending, held, blocked, running) than their limit is refused whole,
// before anything is written, with Code::kResourceExhausted (HTTP 429). Jobs with user "" are
// nobody's and never limited. A pure check over UserUsage's counts; actor thread only.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "daemon/user_usage.h"

namespace gpuq::daemon {

// ok() when `user` may queue `adding` more jobs; else the refusal, saying what to do.
Status check_max_queued(const UserUsage& users, const std::string& user, int64_t adding);

}  // namespace gpuq::daemon
