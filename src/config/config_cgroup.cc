// SPDX-License-Identifier: Apache-2.0
#include "config/config_cgroup.h"

#include <fmt/format.h>

#include "config/config_text.h"

namespace gpuq::config {

Status read_cgroup_table(const toml::table* table, std::string_view path, std::string& root) {
  if (table == nullptr) return ok();
  const toml::node* node = table->get("root");
  if (node == nullptr) return ok();
  const auto* text = node->as_string();
  if (text == nullptr || (text->get() != "off" && (text->get().empty() || text->get()[0] != '/'))) {
    const auto& where = node->source();
    return fail(Code::kInvalidArgument,
                fmt::format("{}:{}:{}: {}", path, where.begin.line, where.begin.column,
                            one_line("cgroup.root must be \"off\" or an absolute cgroup v2 directory "
                                     "in quotes, e.g. root = \"/sys/fs/cgroup/gpuq\"")));
  }
  root = text->get();
  return ok();
}

}  // namespace gpuq::config
