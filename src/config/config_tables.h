// SPDX-License-Identifier: Apache-2.0
// Internal to the config reader (config.cc): which tables config.toml may hold and the keys of
// each (the file's schema, in the order the docs show them), for the strict check that refuses
// an unknown table or setting and for hints about a setting written in the wrong table.
// Pure; thread-safe.
#pragma once

#include <string_view>
#include <vector>

namespace gpuq::config {

struct TableSpec {
  std::string_view name;
  std::vector<std::string_view> keys;
};

// Every table but [lanes.NAME] and [[hook]], which have their own readers.
const std::vector<TableSpec>& table_specs();
// "[lanes.NAME], [scheduler], ...": every table, for messages.
extern const std::string_view kKnownTables;

bool contains(const std::vector<std::string_view>& words, std::string_view word);
// The spec of a table that table_specs() lists.
const TableSpec& spec_named(std::string_view name);
// The table that knows `key`, or nullptr.
const TableSpec* table_with_key(std::string_view key);

}  // namespace gpuq::config
