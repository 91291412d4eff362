// SPDX-License-Identifier: Apache-2.0
// queue_bench's parts beyond latency, throughput and submits (queue_bench.cc lists them all),
// one file each: the history part (queue_bench_history.cc), the queued part
// (queue_bench_queued.cc) and the sweep part (queue_bench_sweep.cc). Each starts its own
// daemons, measures, and stops them; the print functions write its rows of the table.
#pragma once

#include <string>
#include <vector>

#include "queue_bench_daemon.h"

namespace gpuq::bench {

// `count` finished jobs as a user's history holds them: a script-like command, a login
// environment (~2 KiB), one run and submitted/started/ended events each; one in ten failed.
// They finished one a minute, up to now.
void seed_history(const std::string& home, int count);

// What `gpuq status` costs against one daemon (the whole command, and the daemon's answer to
// GET /v1/status alone, without starting a process), and the daemon's memory before and after.
struct StatusCost {
  std::vector<double> ms, api_ms;
  double rss_start = 0, rss_after = 0;
};
StatusCost measure_status(Daemon& d, int calls);

// The queued part: a drained fake:64 daemon with `count` ready jobs, `bulk` held ones, and
// `bulk` more that wait for a held "gate" job; its memory, its watchers' look, and the
// scheduling pass after each kind of change (the pass that follows the change, read from
// /v1/health's pass counter).
struct QueuedCost {
  double rss_mib = 0, settled_ms = 0, look_ms = 0;
  double hold_ms = 0, release_ms = 0;    // of one job, the head of the queue
  std::vector<double> bulk_release_ms;  // the held jobs released one by one
  double dependency_ms = 0;             // the gate cancelled: its waiting jobs are ready
  double undrain_ms = 0;                // the first pass that starts jobs
  double undrain_starts_ms = 0;         // of it, starting them
  std::vector<double> status_ms;        // `gpuq status` (the default view) with them queued
  std::vector<double> user_status_ms;   // `gpuq status --user` of a user with none of them
  double restart_ms = 0, rss_restarted_mib = 0;  // the daemon started again with them queued
};
QueuedCost measure_queued(const std::string& binary, const std::string& dir, int count, int bulk,
                          int calls);
void print_queued(const QueuedCost& cost, int count, int bulk);

// The sweep part: one array of `count` elements queued by one request to a drained fake:8
// daemon, each element with this process's environment (as the CLI sends its own), and what
// it costs: the request, the daemon's memory, `gpuq status` (one line for the array) right
// after a change to the queue and when nothing changed, and GET /v1/arrays/NAME.
struct SweepCost {
  double submit_ms = 0, rss_before = 0, rss_after = 0, array_ms = 0;
  std::vector<double> status_after_change_ms, status_ms;
  std::vector<double> mixed_after_change_ms;  // with one more job waiting behind the array
  double restart_ms = 0, rss_restarted = 0;   // the daemon started again with them queued
  double cancel_ms = 0;                       // POST /v1/arrays/NAME/cancel of every element
};
SweepCost measure_sweep(const std::string& binary, const std::string& dir, int count, int calls);
void print_sweep(const SweepCost& cost, int count);

}  // namespace gpuq::bench
