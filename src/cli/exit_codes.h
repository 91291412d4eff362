// SPDX-License-Identifier: Apache-2.0
// The exit statuses of the `gpuq` client, in one place, so that scripts can rely on them.
// Constants only.
#pragma once

namespace gpuq::cli {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;     // the daemon refused, or a waited-for job did not succeed
constexpr int kExitUsage = 2;      // the command line is wrong; nothing was sent
constexpr int kExitNoDaemon = 3;   // no daemon is running for this home (`gpuq fleet`: the
                                   // fleet's store cannot be reached)
constexpr int kExitTimeout = 124;  // `gpuq wait --timeout` ran out (as timeout(1) does)

}  // namespace gpuq::cli
