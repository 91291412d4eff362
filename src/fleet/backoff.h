// SPDX-License-Identifier: Apache-2.0
// The waits between a store's attempts: jittered, doubling from StoreOptions::backoff_ms, at
// most 5 s, so that nodes that failed together do not retry together. Used by the S3 store
// (between retried requests) and the directory store (while another writer holds its lock).
// A Backoff belongs to one call on one thread.
#pragma once

#include <cstdint>
#include <random>

namespace gpuq::fleet {

class Backoff {
 public:
  explicit Backoff(int64_t first_ms, int64_t max_ms = kMaxBackoffMs);

  // The next wait in ms: uniform in [d/2, d], where d starts at `first_ms` and doubles each
  // time up to `max_ms` (kMaxBackoffMs unless a caller waits for something briefer).
  int64_t next_ms();
  // Sleeps for next_ms(), or for `at_most_ms` when that is shorter (a deadline is near).
  void wait(int64_t at_most_ms = INT64_MAX);

  static constexpr int64_t kMaxBackoffMs = 5'000;

 private:
  int64_t ceiling_ms_;
  int64_t max_ms_;
  std::mt19937_64 random_;
};

}  // namespace gpuq::fleet
