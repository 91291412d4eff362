// SPDX-License-Identifier: Apache-2.0
#include "web/assets.h"

#include "web/assets_data.h"

namespace gpuq::web {

const Asset* find_asset(std::string_view path) {
  if (path == "/") path = "/index.html";
  for (const Asset& asset : all_assets()) {
    if (asset.path == path) return &asset;
  }
  return nullptr;
}

std::span<const Asset> all_assets() { return generated_assets(); }

}  // namespace gpuq::web
