// SPDX-License-Identifier: Apache-2.0
// The store's schema, as an ordered list of migrations: migration N takes a database from
// version N-1 to N. The version lives in one place, the `schema_migrations` table; a database
// written by a newer gpuq (a version this build does not know) is refused with a message.
// Single-threaded: called once when the daemon opens its store.
#pragma once

#include "store/sqlite.h"

namespace gpuq::store {

// The schema version this build writes.
int current_schema_version();

// Brings `db` up to `target` (default: current_schema_version()), each step in its own
// transaction.
Status migrate(Database& db, int target = -1);

// The version `db` is at (0 for an empty database).
Result<int> schema_version(Database& db);

}  // namespace gpuq::store
