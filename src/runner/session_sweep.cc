// SPDX-License-Identifier: Apache-2.0
#include "runner/session_sweep.h"

#include <csignal>
#include <vector>

namespace gpuq::runner {
namespace {

// False when a process other than the vanished shim holds its pid: the old session is gone.
bool session_is_the_runs(os::ProcessTable& table, pid_t session, uint64_t shim_start_ticks) {
  auto leader = table.facts(session);
  return !leader || leader->zombie || leader->start_ticks == shim_start_ticks;
}

}  // namespace

SessionRound sweep_session_once(os::ProcessTable& table, pid_t session, uint64_t shim_start_ticks) {
  SessionRound round;
  if (session <= 1 || !session_is_the_runs(table, session, shim_start_ticks)) {
    round.done = true;
    return round;
  }
  std::vector<os::ProcessFacts> members;
  for (pid_t pid : table.pids()) {
    auto facts = table.facts(pid);
    if (!facts || facts->zombie || facts->session != session) continue;
    if (facts->start_ticks < shim_start_ticks) continue;  // older than the run: not its
    members.push_back(*facts);
  }
  // Checked again after the listing: the old members may all have ended and the pid been
  // given to a new session leader while we listed.
  if (!session_is_the_runs(table, session, shim_start_ticks)) {
    round.done = true;
    return round;
  }
  for (const auto& m : members) {
    if (table.signal(m.pid, m.start_ticks, SIGKILL) == os::SignalResult::kSent) ++round.signalled;
  }
  round.done = members.empty();
  return round;
}

}  // namespace gpuq::runner
