// SPDX-License-Identifier: Apache-2.0
// What keeps the gpuq binary within glibc 2.34 (docs/install.md): libstdc++.a, linked in,
// brings std::random_device's code (random.o, pulled in by the library's own string
// instantiations even though gpuq never makes a random_device), and Debian 12's copy calls
// arc4random, which glibc has only since 2.36. The link wraps that symbol
// (-Wl,--wrap=arc4random in CMakeLists.txt), so the call lands here: the same 32 random bits,
// from getrandom(2), which glibc has had since 2.25. tests/release checks the binary's symbol
// versions.
#include <cstdint>

#include "base/random.h"

extern "C" uint32_t __wrap_arc4random(void) { return static_cast<uint32_t>(gpuq::random_seed()); }
