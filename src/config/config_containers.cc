// SPDX-License-Identifier: Apache-2.0
#include "config/config_containers.h"

#include <fmt/format.h>

#include "config/config_text.h"

namespace gpuq::config {
Status read_containers_table(const toml::table* table, std::string_view path,
                             ContainersConfig& containers) {
  if (table == nullptr) return ok();
  if (const toml::node* node = table->get("runtime")) {
    const auto* text = node->as_string();
    if (text == nullptr || (text->get() != "docker" && text->get() != "podman")) {
      return error_at(
          path, node->source(),
          "containers.runtime must be \"docker\" or \"podman\" (in quotes); leave it out to "
          "use whichever is on the daemon's PATH, docker first");
    }
    containers.runtime = text->get();
  }
  if (const toml::node* node = table->get("extra_args")) {
    const auto* array = node->as_array();
    std::string_view help =
        "containers.extra_args must be a list of strings, one argument each, e.g. extra_args = "
        "[\"--runtime\", \"runc\"]";
    if (array == nullptr) return error_at(path, node->source(), help);
    std::vector<std::string> args;
    for (const auto& item : *array) {
      const auto* text = item.as_string();
      if (text == nullptr) return error_at(path, item.source(), help);
      if (text->get().empty()) {
        return error_at(path, item.source(),
                        "containers.extra_args: an argument is empty; remove it");
      }
      args.push_back(text->get());
    }
    containers.extra_args = std::move(args);
  }
  return ok();
}

}  // namespace gpuq::config
