// SPDX-License-Identifier: Apache-2.0
// A TCP forwarder on loopback that a test can break: it passes bytes between its clients and
// a target port (an S3Server), and on cut() closes its listener and every connection, so that
// calls through it fail as if the network went away, until restore(). It can also lose the
// next answers (lose_answers): the target has done the request, the client hears nothing, as
// when a connection dies after a write was sent.
//
//   auto proxy = testing::TcpProxy::start(server->port());
//   StoreOptions options = server->options();
//   options.endpoint = (*proxy)->endpoint();
//
// One thread accepts; each connection has two threads, one per direction. The destructor cuts
// and joins them all.
// Thread rules: every method may be called from any thread.
#pragma once

#include <atomic>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/status.h"

namespace gpuq::fleet::testing {

class TcpProxy {
 public:
  // Listens on a free port of 127.0.0.1 and forwards to 127.0.0.1:`target_port`.
  static Result<std::unique_ptr<TcpProxy>> start(int target_port);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }
  std::string endpoint() const;  // "http://127.0.0.1:PORT"

  // Closes the listener and every open connection; connecting is refused until restore().
  void cut();
  // Listens again on the same port.
  Status restore();
  // The next `count` answers from the target are not passed on: on the first bytes of each,
  // its connection is closed at both ends instead.
  void lose_answers(int count) { answers_to_lose_ += count; }
  // How many answers were lost so far: a test checks its failure really happened.
  int answers_lost() const { return answers_lost_; }

 private:
  struct Connection;

  explicit TcpProxy(int target_port);
  Status listen_on(int port);
  void accept_loop(int listener);
  void pump(Connection& connection, bool to_client);
  // Joins the threads of connections that have ended (all of them when `all`).
  void reap(bool all);

  const int target_port_;
  int port_ = 0;
  std::atomic<int> answers_to_lose_{0};
  std::atomic<int> answers_lost_{0};
  std::mutex mutex_;  // guards the members below
  int listener_ = -1;
  std::thread acceptor_;
  std::list<std::unique_ptr<Connection>> connections_;
};

}  // namespace gpuq::fleet::testing
