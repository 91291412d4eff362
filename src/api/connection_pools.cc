// SPDX-License-Identifier: Apache-2.0
#include "api/connection_pools.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpuq::api {

std::string_view connection_class_name(ConnectionClass cls) {
  switch (cls) {
    case ConnectionClass::kUnix: return "unix";
    case ConnectionClass::kTcpAnonymous: return "tcp_anonymous";
    case ConnectionClass::kTcpAuthenticated: return "tcp_authenticated";
    case ConnectionClass::kEventStream: return "event_streams";
  }
  return "unknown";
}

int ConnectionCaps::cap(ConnectionClass cls) const {
  switch (cls) {
    case ConnectionClass::kUnix: return unix_total;
    case ConnectionClass::kTcpAnonymous: return tcp_anonymous;
    case ConnectionClass::kTcpAuthenticated: return tcp_authenticated;
    case ConnectionClass::kEventStream: return event_streams;
  }
  return 0;
}

ConnectionCaps fit_to_descriptors(ConnectionCaps caps, int64_t descriptors, int reserved) {
  int64_t budget = std::max<int64_t>(descriptors - reserved, 0);
  if (caps.total() <= budget) return caps;
  double scale = static_cast<double>(budget) / caps.total();
  auto shrink = [scale](int cap, int floor) { return std::max(floor, static_cast<int>(cap * scale)); };
  int share = caps.unix_total > 0 ? caps.unix_per_uid * 1000 / caps.unix_total : 500;  // per mille
  caps.unix_total = shrink(caps.unix_total, 8);
  caps.unix_per_uid = std::max(4, caps.unix_total * share / 1000);
  caps.tcp_anonymous = shrink(caps.tcp_anonymous, 4);
  caps.tcp_authenticated = shrink(caps.tcp_authenticated, 4);
  caps.event_streams = shrink(caps.event_streams, 2);
  return caps;
}

ConnectionPools::Id ConnectionPools::oldest_idle(ConnectionClass cls, std::optional<uid_t> uid,
                                                 Id except) const {
  for (Id id : order_[index(cls)]) {
    const Entry& e = entries_.at(id);
    if (e.idle && id != except && (!uid || e.uid == *uid)) return id;
  }
  return 0;
}

std::optional<ConnectionPools::Id> ConnectionPools::make_room(ConnectionClass cls, uid_t uid,
                                                              Id moving) const {
  if (cls == ConnectionClass::kUnix) {
    // A uid at its share makes room among its own connections only: one local process
    // cannot take the others' places.
    auto it = unix_by_uid_.find(uid);
    if (it != unix_by_uid_.end() && it->second >= caps_.unix_per_uid) {
      return oldest_idle(cls, uid, moving);
    }
  }
  if (counts_[index(cls)].open < caps_.cap(cls)) return std::nullopt;
  return oldest_idle(cls, std::nullopt, moving);
}

void ConnectionPools::insert(Id id, ConnectionClass cls, uid_t uid, bool idle) {
  auto& order = order_[index(cls)];
  entries_[id] = Entry{cls, uid, idle, order.insert(order.end(), id)};
  ++counts_[index(cls)].open;
  if (cls == ConnectionClass::kUnix) ++unix_by_uid_[uid];
}

void ConnectionPools::erase(Id id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  const Entry& e = it->second;
  order_[index(e.cls)].erase(e.order);
  --counts_[index(e.cls)].open;
  if (e.cls == ConnectionClass::kUnix) {
    auto uid = unix_by_uid_.find(e.uid);
    if (--uid->second == 0) unix_by_uid_.erase(uid);
  }
  entries_.erase(it);
}

bool ConnectionPools::claim_place(ConnectionClass cls, uid_t uid, Id moving, Admission& admission) {
  std::optional<Id> room = make_room(cls, uid, moving);
  if (room && *room == 0) {
    ++counts_[index(cls)].refused;
    return false;
  }
  if (room) {
    erase(*room);
    ++counts_[index(cls)].displaced;
    admission.displaced = room;
  }
  return true;
}

ConnectionPools::Admission ConnectionPools::admit(ConnectionClass cls, uid_t uid) {
  Admission admission;
  if (!claim_place(cls, uid, 0, admission)) return admission;
  admission.id = next_id_++;
  insert(admission.id, cls, uid, true);
  return admission;
}

ConnectionPools::Admission ConnectionPools::move(Id id, ConnectionClass to) {
  Admission admission;
  auto it = entries_.find(id);
  if (it == entries_.end()) return admission;
  if (it->second.cls == to) {
    admission.id = id;
    return admission;
  }
  uid_t uid = it->second.uid;
  if (!claim_place(to, uid, id, admission)) return admission;
  erase(id);
  insert(id, to, uid, false);
  admission.id = id;
  return admission;
}

void ConnectionPools::set_idle(Id id, bool idle) {
  auto it = entries_.find(id);
  if (it != entries_.end()) it->second.idle = idle;
}

void ConnectionPools::release(Id id) { erase(id); }

std::optional<ConnectionClass> ConnectionPools::class_of(Id id) const {
  auto it = entries_.find(id);
  if (it == entries_.end()) return std::nullopt;
  return it->second.cls;
}

int ConnectionPools::open_for_uid(uid_t uid) const {
  auto it = unix_by_uid_.find(uid);
  return it == unix_by_uid_.end() ? 0 : it->second;
}

RefusalAlarm::Check RefusalAlarm::check(int64_t now_ms, int64_t wall_ms,
                                        const ConnectionPools& pools) {
  constexpr std::array kClasses = {ConnectionClass::kUnix, ConnectionClass::kTcpAnonymous,
                                   ConnectionClass::kTcpAuthenticated, ConnectionClass::kEventStream};
  Check out;
  bool news = false;
  for (ConnectionClass cls : kClasses) {
    const auto& now = pools.counts(cls);
    const auto& before = reported_[static_cast<size_t>(cls)];
    news = news || now.refused != before.refused || now.displaced != before.displaced;
  }
  if (!news) return out;
  if (last_event_ms_ && now_ms - *last_event_ms_ < interval_ms_) {
    out.next_ms = *last_event_ms_ + interval_ms_;
    return out;
  }
  nlohmann::json classes = nlohmann::json::object();
  int64_t refused = 0;
  int64_t displaced = 0;
  for (ConnectionClass cls : kClasses) {
    const auto& now = pools.counts(cls);
    auto& before = reported_[static_cast<size_t>(cls)];
    int64_t r = now.refused - before.refused;
    int64_t d = now.displaced - before.displaced;
    if (r != 0 || d != 0) {
      classes[std::string(connection_class_name(cls))] = {
          {"refused", r}, {"displaced", d}, {"open", now.open}, {"limit", pools.caps().cap(cls)}};
    }
    refused += r;
    displaced += d;
    before = now;
  }
  std::string why = fmt::format(
      "{} connection(s) refused (503: their class was full and none of it was idle) and {} idle "
      "connection(s) closed to make room, since {}; a flood of connections, or clients that keep "
      "too many open. The unix socket has places of its own (docs/api.md, \"Connections\")",
      refused, displaced, last_event_ms_ ? "the last such event" : "the daemon started");
  out.event = nlohmann::json{{"refused", refused}, {"displaced", displaced}, {"classes", classes},
                             {"why", why}};
  if (last_event_wall_ms_) out.event->emplace("since_ms", *last_event_wall_ms_);
  last_event_ms_ = now_ms;
  last_event_wall_ms_ = wall_ms;
  out.next_ms = now_ms + interval_ms_;
  return out;
}

}  // namespace gpuq::api
