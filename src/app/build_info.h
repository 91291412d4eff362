// SPDX-License-Identifier: Apache-2.0
// What this gpuq binary is, as `gpuq --version` prints it: the version (the one in
// CMakeLists.txt's project()), the commit and day it was built from (kBuildCommit and
// kBuildDate, written at build time by cmake/build_info.cmake), the HTTP API version it serves
// and speaks (base/api_version.h) and the store schema it writes (store/schema.h).
#pragma once

#include <string>

namespace gpuq::app {

extern const char* const kBuildCommit;  // "5c7e187a1b2c", "…-dirty", or "unknown"
extern const char* const kBuildDate;    // "2026-12-02" (UTC)

// Two lines, the first like any program's:
//   gpuq 0.1.0 (commit 5c7e187a1b2c, built 2026-12-02)
//   API 1, store schema 14
std::string version_text();

// "gpuq 0.1.0": what the man pages and completion scripts say they describe.
std::string release_name();

}  // namespace gpuq::app
