// SPDX-License-Identifier: Apache-2.0
#include "base/random.h"

#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>

namespace gpuq {

Status random_bytes(void* out, size_t size) {
  auto* bytes = static_cast<unsigned char*>(out);
  size_t got = 0;
  while (got < size) {
    ssize_t n = ::getrandom(bytes + got, size - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno_error("getrandom");
    }
    got += static_cast<size_t>(n);
  }
  return ok();
}

uint64_t random_seed() {
  uint64_t seed = 0;
  if (random_bytes(&seed, sizeof seed)) return seed;
  static std::atomic<uint64_t> counter{0};
  auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  return static_cast<uint64_t>(now) ^ (static_cast<uint64_t>(::getpid()) << 32) ^
         (++counter * 0x9E3779B97F4A7C15ull);
}

}  // namespace gpuq
