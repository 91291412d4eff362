// SPDX-License-Identifier: Apache-2.0
// What is left of a run whose shim vanished without an exit record (it was killed, or the
// machine lost power): the job's processes stay in the shim's session unless they called
// setsid. One round of the sweep signals each of them with SIGKILL, checked one by one through
// the process table (pidfd, then start time), so a reused pid is never hit.
//
// The session id is the shim's pid. While any member of the old session lives, the kernel
// cannot give that pid to a new process; so a live process with the shim's pid but another
// start time means the old session is already empty, and anything now in a session of that id
// belongs to someone else: the sweep then stops without signalling. Members that started
// before the shim cannot be the run's and are never touched.
//
// Pure logic over a ProcessTable; no sleeps (the caller repeats rounds a moment apart until
// one finds nothing). Not thread-safe beyond the table's own rules.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "os/process_table.h"

namespace gpuq::runner {

struct SessionRound {
  int signalled = 0;   // members sent SIGKILL in this round
  bool done = false;   // nothing of the session is left (or it is someone else's now)
};

SessionRound sweep_session_once(os::ProcessTable& table, pid_t session, uint64_t shim_start_ticks);

}  // namespace gpuq::runner
