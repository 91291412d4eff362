// SPDX-License-Identifier: Apache-2.0
// `gpuq daemon`: puts the pieces together — the instance lock, GPU discovery, the store, the
// queue actor on the main thread and the API server on a second thread — and runs until
// SIGTERM or SIGINT. With --detach it returns once the daemon answers on its socket.
// Runs runs: they belong to their shims and keep going when the daemon stops.
#pragma once

#include "cli/cli.h"

namespace gpuq::app {

int serve(const cli::DaemonFlags& flags);

}  // namespace gpuq::app
