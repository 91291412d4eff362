// SPDX-License-Identifier: Apache-2.0
// The generated table of assets (assets_data.cc in the build directory, written by
// cmake/embed_assets.cmake). Used only by assets.cc. Immutable data; thread-safe.
#pragma once

#include <span>

#include "web/assets.h"

namespace gpuq::web {

std::span<const Asset> generated_assets();

}  // namespace gpuq::web
