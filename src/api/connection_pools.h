// SPDX-License-Identifier: Apache-2.0
// The API listeners' connection classes (docs/api.md, "Connections"): which connections the
// daemon keeps open, so that connections that have shown nothing cannot lock the owner out.
//
// Every open connection is in exactly one pool, each with its own cap:
// - unix: the unix socket, with a share per peer uid (no uid may hold more than its share);
// - tcp_anonymous: TCP connections that have not shown the token yet (a short head deadline);
// - tcp_authenticated: TCP connections on which a request showed the token;
// - event_streams: connections holding GET /v1/events/stream, whichever listener they came on.
// The pools never share a cap, so a flood on TCP cannot take a slot from the unix socket.
//
// A connection is *idle* while it waits for, or reads, a request head: it holds nothing of
// anyone's. When a pool (or a uid's share) is full, a newcomer takes the place of the oldest
// idle connection there, which the caller then closes; only when no connection there is idle
// is the newcomer refused (503). So a flood of connections that never send a request only
// ever displaces itself, and a client that sends its request at once gets in.
//
// Pure bookkeeping: no sockets, no clock. Not thread-safe: the API's io_context thread owns it.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace gpuq::api {

enum class ConnectionClass { kUnix, kTcpAnonymous, kTcpAuthenticated, kEventStream };
inline constexpr size_t kConnectionClasses = 4;
// The class's name in /metrics labels, events and errors: "unix", "tcp_anonymous", ...
std::string_view connection_class_name(ConnectionClass cls);

struct ConnectionCaps {
  int unix_total = 0;
  int unix_per_uid = 0;  // a uid's share of unix_total
  int tcp_anonymous = 0;
  int tcp_authenticated = 0;
  int event_streams = 0;
  int cap(ConnectionClass cls) const;
  int total() const { return unix_total + tcp_anonymous + tcp_authenticated + event_streams; }
};

// `caps` made to fit a process allowed `descriptors` open files (RLIMIT_NOFILE's soft limit),
// with `reserved` of them kept for everything else the daemon opens (its store, runs' pidfds
// and logs, refusals being answered): each cap shrunk in the same proportion, a uid's share
// kept at half the unix total, none below a few. Unchanged when they fit.
ConnectionCaps fit_to_descriptors(ConnectionCaps caps, int64_t descriptors, int reserved);

class ConnectionPools {
 public:
  using Id = uint64_t;

  // What became of a newcomer: admitted (with the id of the connection it displaced, which the
  // caller must close) or refused (id 0).
  struct Admission {
    Id id = 0;
    std::optional<Id> displaced;
    bool admitted() const { return id != 0; }
  };

  // The counts of one class since the daemon started.
  struct ClassCounts {
    int open = 0;
    int64_t refused = 0;    // newcomers answered 503
    int64_t displaced = 0;  // idle connections closed to make room
  };

  explicit ConnectionPools(ConnectionCaps caps) : caps_(caps) {}

  // A new connection of `cls` (kUnix with its peer's uid), idle until set_idle(id, false).
  Admission admit(ConnectionClass cls, uid_t uid = 0);
  // Moves open connection `id` into `to` (a TCP connection that showed the token, or any
  // connection that becomes an event stream), busy. Refused: `id` stays where it was.
  Admission move(Id id, ConnectionClass to);
  // Whether `id` waits for or reads a request head (and so may be displaced).
  void set_idle(Id id, bool idle);
  // The connection is gone (closed, or displaced and closed).
  void release(Id id);

  std::optional<ConnectionClass> class_of(Id id) const;
  const ClassCounts& counts(ConnectionClass cls) const { return counts_[index(cls)]; }
  int open_for_uid(uid_t uid) const;
  const ConnectionCaps& caps() const { return caps_; }

 private:
  struct Entry {
    ConnectionClass cls;
    uid_t uid;
    bool idle;
    std::list<Id>::iterator order;  // its place in its class's order_ (oldest first)
  };
  static size_t index(ConnectionClass cls) { return static_cast<size_t>(cls); }
  // Room in `cls` for one more of `uid`: nullopt when there is room as it is, else the oldest
  // idle connection to displace (0 when none is idle: refuse).
  std::optional<Id> make_room(ConnectionClass cls, uid_t uid, Id moving) const;
  Id oldest_idle(ConnectionClass cls, std::optional<uid_t> uid, Id except) const;
  // A place in `cls` for one more of `uid` (`moving`: a connection that moves in), made by
  // displacing the oldest idle connection there when it is full (in `admission.displaced`);
  // false, counted as a refusal, when there is none.
  bool claim_place(ConnectionClass cls, uid_t uid, Id moving, Admission& admission);
  void insert(Id id, ConnectionClass cls, uid_t uid, bool idle);
  void erase(Id id);

  ConnectionCaps caps_;
  Id next_id_ = 1;
  // Each class's open connections, by the time they entered it (oldest first).
  std::array<std::list<Id>, kConnectionClasses> order_;
  std::unordered_map<Id, Entry> entries_;
  std::map<uid_t, int> unix_by_uid_;
  std::array<ClassCounts, kConnectionClasses> counts_{};
};

// When to record event daemon.connections_refused (docs/api.md, "Connections"): at the first
// refusal or displacement after a quiet interval, then at most once an interval while they go
// on, each event with what happened since the one before, so that a flood is told without
// writing an event per connection. Pure: the caller brings the time and runs the timer.
class RefusalAlarm {
 public:
  explicit RefusalAlarm(int64_t interval_ms) : interval_ms_(interval_ms) {}

  struct Check {
    std::optional<nlohmann::json> event;  // the event's data, when one is due now
    std::optional<int64_t> next_ms;       // when to check again; nullopt: only at the next refusal
  };
  // Call after a refusal or displacement, and at the time the last Check asked for. `now_ms`
  // is a steady clock's (the intervals, next_ms); `wall_ms` the epoch time of the same moment,
  // which an event's "since_ms" tells (the last event's).
  Check check(int64_t now_ms, int64_t wall_ms, const ConnectionPools& pools);

 private:
  int64_t interval_ms_;
  std::optional<int64_t> last_event_ms_;
  std::optional<int64_t> last_event_wall_ms_;
  std::array<ConnectionPools::ClassCounts, kConnectionClasses> reported_{};
};

}  // namespace gpuq::api
