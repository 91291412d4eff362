// SPDX-License-Identifier: Apache-2.0
#include "config/config_sweeps.h"

#include <fmt/format.h>

#include "config/config.h"

namespace gpuq::config {

Status read_sweeps_table(const toml::table* table, std::string_view path, int64_t& max_elements) {
  if (table == nullptr) return ok();
  const toml::node* node = table->get("max_elements");
  if (node == nullptr) return ok();
  const auto* value = node->as_integer();
  if (value == nullptr || value->get() < 1 || value->get() > kMostSweepElements) {
    const auto& where = node->source();
    return fail(Code::kInvalidArgument,
                fmt::format("{}:{}:{}: sweeps.max_elements must be a whole number from 1 to {}, "
                            "e.g. max_elements = 10000",
                            path, where.begin.line, where.begin.column, kMostSweepElements));
  }
  max_elements = value->get();
  return ok();
}

}  // namespace gpuq::config
