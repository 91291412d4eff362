// SPDX-License-Identifier: Apache-2.0
#include "app/build_info.h"

#include <fmt/format.h>

#include "base/api_version.h"
#include "store/schema.h"

#ifndef GPUQ_VERSION
#define GPUQ_VERSION "0.0.0"
#endif

namespace gpuq::app {

std::string version_text() {
  return fmt::format("gpuq {} (commit {}, built {})\nAPI {}, store schema {}", GPUQ_VERSION,
                     kBuildCommit, kBuildDate, kApiVersion, store::current_schema_version());
}

std::string release_name() { return fmt::format("gpuq {}", GPUQ_VERSION); }

}  // namespace gpuq::app
