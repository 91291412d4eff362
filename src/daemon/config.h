// SPDX-License-Identifier: Apache-2.0
// The daemon's view of config.toml. Reading the file lives in the config module
// (src/config/config.h, shared with `gpuq simulate`); this header names its types and loaders
// in the daemon's namespace, where the actor, the watchers, the hooks and the API have always
// found them, and adds policy_of, which needs sched (a module src/config may not use).
// Pure declarations and a pure function; thread-safe.
#pragma once

#include "config/config.h"
#include "sched/scheduler.h"

namespace gpuq::daemon {

using config::Config;
using config::ContainersConfig;
using config::HookConfig;
using config::kConfigFileName;
using config::kMaxLaneCapacity;
using config::LaneConfig;
using config::load_config;
using config::parse_config;
using config::WatchConfig;

// The scheduler policy the config names.
sched::Policy policy_of(const Config& config);

}  // namespace gpuq::daemon
