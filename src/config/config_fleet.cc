// SPDX-License-Identifier: Apache-2.0
#include "config/config_fleet.h"

#include <fmt/format.h>

#include "base/duration.h"
#include "base/size.h"
#include "config/config_text.h"

namespace gpuq::config {
namespace {

Status read_string(const toml::table& table, std::string_view path, std::string_view key, std::string& out) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return ok();
  const auto* text = node->as_string();
  if (text == nullptr) {
    return error_at(path, node->source(), fmt::format("fleet.{} must be a string in quotes", key));
  }
  out = text->get();
  return ok();
}

Status read_duration(const toml::table& table, std::string_view path, std::string_view key, int64_t min_ms,
                     int64_t& out) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return ok();
  const auto* text = node->as_string();
  auto duration = text ? parse_duration(text->get()) : Result<Millis>(fail(Code::kInvalidArgument, ""));
  if (!duration || duration->count() < min_ms || duration->count() > 24LL * 3'600'000) {
    return error_at(path, node->source(),
                    fmt::format("fleet.{} must be a duration in quotes from {} to 1d, e.g. {} = \"{}\"", key,
                                format_duration(Millis(min_ms)), key,
                                format_duration(Millis(min_ms * 10))));
  }
  out = duration->count();
  return ok();
}

Status read_classes(const toml::table& table, std::string_view path, std::vector<std::string>& out) {
  const toml::node* node = table.get("classes");
  if (node == nullptr) return ok();
  const auto* array = node->as_array();
  std::string help = "fleet.classes must be a list of class names, e.g. classes = [\"a100\", \"big\"]";
  if (array == nullptr) return error_at(path, node->source(), help);
  for (const auto& item : *array) {
    const auto* text = item.as_string();
    if (text == nullptr || text->get().empty()) return error_at(path, item.source(), help);
    out.push_back(text->get());
  }
  return ok();
}

// fleet.part_size: a size (base/size.h) within S3's part bounds.
Status read_part_size(const toml::table& table, std::string_view path, int64_t& out) {
  const toml::node* node = table.get("part_size");
  if (node == nullptr) return ok();
  const auto* text = node->as_string();
  auto size = text ? parse_size(text->get()) : Result<int64_t>(fail(Code::kInvalidArgument, ""));
  constexpr int64_t kMin = int64_t{5} << 20, kMax = int64_t{5} << 30;
  if (!size || *size < kMin || *size > kMax) {
    return error_at(path, node->source(),
                    "fleet.part_size must be a size in quotes from 5MiB to 5GiB (S3's bounds on a "
                    "part), e.g. part_size = \"64MiB\"");
  }
  out = *size;
  return ok();
}

Status read_min_free_disk(const toml::table& table, std::string_view path, int64_t& out) {
  const toml::node* node = table.get("min_free_disk");
  if (node == nullptr) return ok();
  const auto* text = node->as_string();
  if (text == nullptr) {
    return error_at(path, node->source(),
                    "fleet.min_free_disk must be a size in quotes, e.g. min_free_disk = \"10GiB\" "
                    "(\"0\" for no floor)");
  }
  auto size = parse_size(text->get());
  if (!size) return error_at(path, node->source(), "fleet.min_free_disk: " + size.error().message);
  out = *size;
  return ok();
}

// fleet.transfers: parts or ranges of one file in flight at once.
Status read_transfers(const toml::table& table, std::string_view path, int& out) {
  const toml::node* node = table.get("transfers");
  if (node == nullptr) return ok();
  const auto* number = node->as_integer();
  if (number == nullptr || number->get() < 1 || number->get() > 64) {
    return error_at(path, node->source(), "fleet.transfers must be a whole number from 1 to 64, e.g. transfers = 4");
  }
  out = static_cast<int>(number->get());
  return ok();
}

}  // namespace

Status read_fleet_table(const toml::table* table, std::string_view path, FleetConfig& fleet) {
  if (table == nullptr) return ok();
  for (auto [key, value] : {std::pair{"url", &fleet.url}, std::pair{"node", &fleet.node},
                            std::pair{"workdir", &fleet.workdir}, std::pair{"data", &fleet.data},
                            std::pair{"endpoint", &fleet.endpoint}, std::pair{"region", &fleet.region},
                            std::pair{"access_key_id", &fleet.access_key_id},
                            std::pair{"secret_access_key", &fleet.secret_access_key},
                            std::pair{"session_token", &fleet.session_token}}) {
    if (auto status = read_string(*table, path, key, *value); !status) return status;
  }
  if (auto status = read_classes(*table, path, fleet.classes); !status) return status;
  for (auto [key, value, min_ms] : {std::tuple{"heartbeat", &fleet.heartbeat_ms, int64_t{100}},
                                    std::tuple{"poll", &fleet.poll_ms, int64_t{100}},
                                    std::tuple{"lease", &fleet.lease_ms, int64_t{600}},
                                    std::tuple{"sync_every", &fleet.sync_every_ms, int64_t{100}},
                                    std::tuple{"timeout", &fleet.timeout_ms, int64_t{100}}}) {
    if (auto status = read_duration(*table, path, key, min_ms, *value); !status) return status;
  }
  if (auto status = read_part_size(*table, path, fleet.part_size); !status) return status;
  if (auto status = read_transfers(*table, path, fleet.transfers); !status) return status;
  if (auto status = read_min_free_disk(*table, path, fleet.min_free_disk_bytes); !status) return status;
  if (!fleet.workdir.empty() && fleet.workdir.front() != '/') {
    return error_at(path, table->get("workdir")->source(),
                    fmt::format("fleet.workdir must be an absolute path, not '{}'", fleet.workdir));
  }
  return ok();
}

}  // namespace gpuq::config
