// SPDX-License-Identifier: Apache-2.0
// The limits on what a client may ask of gpuq, in one place (docs/api.md, "Limits"): the
// ranges spec_from_json and the API's body decoders enforce, so that the daemon never does
// arithmetic that overflows on a value a client chose; the size and nesting of request bodies;
// and the unix-socket listener's limits. The CLI may use the same constants to refuse early.
// Constants only; thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace gpuq::limits {

// --- Values in a job spec and in request bodies --------------------------------------------

// Durations (timeout, est, retry_delay, restart_within, requires_warn, quiet, warn_after): at
// most a year. A year is ~3.2e16 ns, so a duration converted to nanoseconds, or added to any
// instant below kEndOfTimeMs, stays far inside int64.
inline constexpr int64_t kMaxDurationMs = int64_t{365} * 24 * 3600 * 1000;
inline constexpr const char* kMaxDurationText = "365d";

// Instants (not_before): before 2100-01-01T00:00:00Z. In nanoseconds that is ~4.1e18, still
// inside int64 (9.2e18), with room for a duration on top.
inline constexpr int64_t kEndOfTimeMs = int64_t{4'102'444'800'000};
inline constexpr const char* kEndOfTimeText = "2100-01-01T00:00:00Z";

// Counts.
inline constexpr int kMaxJobGpus = 1024;                  // gpus of one job; also GPU indices
inline constexpr int kMaxRetries = 1000;                  // automatic reruns of one job
inline constexpr int64_t kMaxGpuMemMib = int64_t{1} << 30;  // gpu_mem (1 PiB per GPU)
inline constexpr int kMaxSteps = 256;                     // steps of one job

// Priorities: lower runs first; names high/normal/low map inside this range.
inline constexpr int kMinPriority = 0;
inline constexpr int kMaxPriority = 1000;

// Ids (jobs, events, runs as given by clients): positive and inside int64.
inline constexpr int64_t kMaxId = INT64_MAX;

// --- Requests -----------------------------------------------------------------------------

// A request body: the largest legitimate one is a 1 MiB script plus its environment.
inline constexpr size_t kMaxBodyBytes = size_t{8} << 20;
// Arrays and objects nested inside each other in a JSON body. Real bodies nest 3 deep; the
// limit keeps recursive walks of a parsed value (dump, destruction) off the stack's edge.
inline constexpr int kMaxJsonDepth = 64;
// The request line and header fields together.
inline constexpr size_t kMaxHeaderBytes = size_t{16} << 10;

// GET /v1/events: `limit` default and cap, and the longest `wait_ms`.
inline constexpr int64_t kDefaultEventsPerPage = 1000;
inline constexpr int64_t kMaxEventsPerPage = 10'000;
inline constexpr int64_t kMaxEventWaitMs = 60'000;
// GET /v1/timeline and GET /v1/report: the longest window one request reads (a year of
// utilisation samples is millions of rows).
inline constexpr int64_t kMaxReportWindowMs = int64_t{90} * 24 * 3600 * 1000;
inline constexpr const char* kMaxReportWindowText = "90 days";
// GET /v1/jobs/{ref}/log: `limit` default and cap, in bytes.
inline constexpr int64_t kDefaultLogChunk = int64_t{4} << 20;
inline constexpr int64_t kMaxLogChunk = int64_t{16} << 20;

// --- The listeners (docs/api.md, "Connections") -------------------------------------------

// A connection must deliver each request (its first byte to its last) within this long, or
// it is closed; the event stream and long-polls are exempt while they stream or wait.
inline constexpr std::chrono::milliseconds kIdleTimeout{30'000};
// A TCP connection that has not shown the token must deliver each request head (request line
// and header fields) within this long: a few seconds, so that connections that show nothing
// cannot sit on the listener.
inline constexpr std::chrono::milliseconds kAnonymousHeadTimeout{5'000};
// An answer must be taken by the client within this long, or the connection is closed.
inline constexpr std::chrono::milliseconds kWriteTimeout{30'000};
// The connection classes' caps (api/connection_pools.h). Each class has its own: none takes a
// place from another. Past a cap a newcomer replaces the oldest idle connection of its class
// (one waiting for a request), and is answered 503 only when none is idle.
inline constexpr int kMaxUnixConnections = 512;
inline constexpr int kMaxUnixConnectionsPerUid = 256;  // one peer uid's share of the above
inline constexpr int kMaxAnonymousTcpConnections = 32;
inline constexpr int kMaxAuthenticatedTcpConnections = 128;
inline constexpr int kMaxEventStreams = 64;
// Descriptors kept for the rest of the daemon (its store, runs' pidfds and logs, hooks) when
// RLIMIT_NOFILE is too low for every cap above: the caps then shrink to fit the remainder.
inline constexpr int kReservedDescriptors = 256;
// Refusals (503) still being answered at once; past this, a refused connection is closed
// without an answer, so that a flood of refusals holds no more sockets than this.
inline constexpr int kMaxLingeringRefusals = 64;
// Each connection's read buffer starts this large, so that a request of this size (a submit
// with its environment is 2-8 KiB) is read with one call; Beast's first read is 512 bytes
// otherwise, a 2 KiB submit four reads and four polls. At every cap full, 6 MiB in all.
inline constexpr size_t kRequestReadChunk = 8 << 10;
// daemon.connections_refused is recorded at most once in this long, with the counts since
// the last one.
inline constexpr std::chrono::milliseconds kRefusalEventInterval{60'000};
// After an error answer that ends a connection (413, 431, a malformed request, 503), how long
// the daemon keeps reading and discarding what the client still sends, so that the client
// reads the answer instead of a reset.
inline constexpr std::chrono::milliseconds kLingerTimeout{2'000};

}  // namespace gpuq::limits
