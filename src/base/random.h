// SPDX-License-Identifier: Apache-2.0
// Randomness from the kernel (getrandom(2), glibc 2.25), for tokens and for seeding the
// generators that spread run ids, backoff delays and fleet names. std::random_device is not
// used anywhere: libstdc++'s implementation binds arc4random@GLIBC_2.36, and the release
// binary runs on glibc 2.34 (docs/install.md). Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"

namespace gpuq {

// Fills `size` bytes at `out`; fails only when the kernel refuses (no getrandom(2)).
Status random_bytes(void* out, size_t size);

// 64 random bits to seed a generator; never fails (the clock, the pid and a counter when the
// kernel gives nothing, which a seed may settle for).
uint64_t random_seed();

}  // namespace gpuq
