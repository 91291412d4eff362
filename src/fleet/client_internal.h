// SPDX-License-Identifier: Apache-2.0
// Pieces shared by the files of the fleet client (client.cc, client_nodes.cc, client_move.cc)
// and no one else: the small writes the protocol repeats (a new signal, a queue entry, ending a
// job no one claimed) and error helpers. Not part of the fleet's interface.
// Free functions over the store they are given; the store's thread rules apply.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "fleet/layout.h"
#include "fleet/object_store.h"

namespace gpuq::fleet::detail {

// Returns the error of a Status-returning expression from the enclosing function.
#define GPUQ_FLEET_TRY(expr)                             \
  do {                                                   \
    if (auto status_ = (expr); !status_) {               \
      return tl::unexpected(std::move(status_.error())); \
    }                                                    \
  } while (false)

inline bool is_code(const Error& error, Code code) { return error.code == code; }

// Writes a new random value to `signal`, so that nodes polling it look again.
Status bump_signal(ObjectStore& store);

// Creates the queue entry `key` ({"id": id}); one that exists already is fine.
Status create_entry(ObjectStore& store, const std::string& key, std::string_view id);

// The age of an object by the store's clock, or -1 when the store gave no time.
int64_t store_age_ms(int64_t store_now_ms, int64_t modified_ms);

// Ends a job no node has claimed as cancelled (docs/fleet.md, "Cancel"): creates its claim with
// state cancelled (node "", attempt 0, a new token); only when that create wins, removes the
// queue entry and writes ended/MS-ID. Returns false when the create lost (a node has it).
Result<bool> end_unclaimed(ObjectStore& store, const FleetJob& job, std::string reason,
                           int64_t now_ms);

// Whether jobs/ID/cancel exists.
Result<bool> cancel_requested(ObjectStore& store, std::string_view id);

}  // namespace gpuq::fleet::detail
