// SPDX-License-Identifier: Apache-2.0
#include "config/config_http.h"

#include <fmt/format.h>

#include "base/listen_address.h"
#include "config/config_text.h"

namespace gpuq::config {
namespace {

// A name a Host header may carry: letters, digits, '.', '-', '_', or an IPv6 literal in brackets.
bool host_name(std::string_view text) {
  if (text.empty() || text.size() > 253) return false;
  if (text.front() == '[') return text.back() == ']' && text.size() > 2;
  for (char c : text) {
    bool fine = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '-' || c == '_';
    if (!fine) return false;
  }
  return true;
}

}  // namespace

Status read_http_table(const toml::table* table, std::string_view path, HttpConfig& http) {
  if (table == nullptr) return ok();
  if (const toml::node* node = table->get("listen")) {
    const auto* text = node->as_string();
    if (text == nullptr) {
      return error_at(path, node->source(),
                      "http.listen must be a string in quotes, e.g. listen = \"127.0.0.1:7878\" or \"off\"");
    }
    if (auto parsed = parse_listen_address(text->get()); !parsed) {
      return error_at(path, node->source(), "http.listen: " + parsed.error().message);
    }
    http.listen = text->get();
  }
  if (const toml::node* node = table->get("allowed_hosts")) {
    const auto* array = node->as_array();
    std::string help =
        "http.allowed_hosts must be a list of host names without a port, e.g. allowed_hosts = "
        "[\"box.lan\", \"10.0.0.5\"]";
    if (array == nullptr) return error_at(path, node->source(), help);
    for (const auto& item : *array) {
      const auto* text = item.as_string();
      if (text == nullptr || !host_name(text->get())) return error_at(path, item.source(), help);
      http.allowed_hosts.push_back(text->get());
    }
  }
  if (const toml::node* node = table->get("allow_submit")) {
    const auto* flag = node->as_boolean();
    if (flag == nullptr) {
      return error_at(path, node->source(), "http.allow_submit must be true or false (no quotes)");
    }
    http.allow_submit = flag->get();
  }
  return ok();
}

}  // namespace gpuq::config
