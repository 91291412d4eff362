// SPDX-License-Identifier: Apache-2.0
// The daemon's HTTP/1.1 API (docs/api.md) on a unix socket and, optionally, on a TCP listener
// that also serves the dashboard (docs/api.md, "HTTP listener and the dashboard"): one session
// code path for both socket types; a TCP request passes api/http_policy.h first. Runs on its own io_context thread:
// queries read through the server's own read-only store connection, so they never wait for
// the queue actor; commands (submit, cancel) are handed to the actor's io_context and the
// answer comes back when the actor has committed them. Long-polls for events are woken by
// notify_events(), which the actor calls after each commit.
// Thread rules: construct and listen() on any thread before running the api io_context;
// notify_events() is thread-safe; everything else runs on the api io_context.
// The listener's limits (docs/api.md, "Limits"): header and body size, a deadline for each
// request to arrive and for each answer to be taken, and the connection classes of
// api/connection_pools.h (docs/api.md, "Connections"): the unix socket, TCP connections before
// and after they show the token, and event streams each have places of their own, and a
// request head is judged (the TCP policy, the API version) before its body is read. Past them
// a client gets a JSON error, and no request, however malformed, ends a connection unanswered
// or the daemon (a handler that throws answers 500).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include <boost/beast/core/flat_buffer.hpp>

#include "api/browser_sessions.h"
#include "api/caller.h"
#include "api/connection_pools.h"
#include "api/dir_check.h"
#include "api/eta.h"
#include "api/http.h"
#include "api/http_policy.h"
#include "api/peer_identity.h"
#include "api/user_sessions.h"
#include "base/listen_address.h"
#include "base/paths.h"
#include "daemon/hooks.h"
#include "daemon/queue.h"
#include "model/limits.h"
#include "store/store.h"

namespace gpuq::api {

struct ServerContext {
  boost::asio::io_context& api_ioc;
  boost::asio::io_context& actor_ioc;
  daemon::Queue& queue;
  HomeLayout layout;
  std::string version;
  // Each hook's lag in events, for gpuq_hook_lag_events in /metrics; called on the API
  // thread, so it must be thread-safe. Unset: no hooks to report.
  std::function<std::vector<std::pair<std::string, int64_t>>()> hook_lags = {};
  // The event hooks, for GET /v1/hooks (statuses() is thread-safe). Unset: no hooks.
  const daemon::HookRunner* hooks = nullptr;
  // GET /v1/fleet: the fleet's nodes and jobs as last read (app/fleet_view.h), without waiting
  // for the bucket; thread-safe. Unset, or answering null: this daemon is in no fleet.
  std::function<std::optional<nlohmann::json>()> fleet = {};
  // How runs are contained (runner/cgroup.h), for GET /v1/health and /v1/gpus:
  // {"kind": "cgroup"|"marker", "root": dir or null, "reason": why}. Null: not told.
  nlohmann::json containment = nullptr;
  // A system daemon's users' dashboard sessions (api/user_sessions.h), shared with the TCP
  // listener's policy; null for a single-user daemon.
  std::shared_ptr<UserSessions> sessions = {};
  // The dashboard's browser sessions (api/browser_sessions.h), shared with the TCP listener's
  // policy; null: the pages cannot sign in.
  std::shared_ptr<BrowserSessions> browser_sessions = {};
  // The most elements a sweep may have ([sweeps] max_elements, docs/sweeps.md).
  size_t max_sweep_elements = spec::kDefaultMaxSweepElements;
  // Who may connect to the unix socket and who is an admin (docs/lab.md): a single-user
  // daemon's rules unless it runs with --system.
  PeerRules peers = {};
};

// The listener's limits that tests may lower; the defaults are model/limits.h's.
struct ServerLimits {
  std::chrono::milliseconds idle_timeout;  // a request must arrive within this
  std::chrono::milliseconds anonymous_head_timeout;  // a TCP request head without the token
  ConnectionCaps caps;
  std::chrono::milliseconds write_timeout = limits::kWriteTimeout;  // an answer must be taken within this
  // The defaults, except that GPUQ_TEST_IDLE_TIMEOUT_MS and GPUQ_TEST_WRITE_TIMEOUT_MS (for
  // tests only, so that the deadlines can be driven in milliseconds; read once, when the server
  // is made) replace the idle timeout and the write timeout.
  static ServerLimits from_environment();
};

class Server {
 public:
  Server(ServerContext context, std::unique_ptr<store::Store> read_store);
  ~Server();

  // Binds the unix socket at `path` (replacing a stale one), mode 0600, and starts accepting;
  // with `group` (a system daemon's box socket), mode 0660 and that group. May be called for
  // more than one socket.
  Status listen_unix(const std::string& path, std::optional<gid_t> group = std::nullopt);
  // Binds the TCP listener at `address` (port 0: any free port) and starts accepting; its
  // requests are judged by `policy`. Code::kUnavailable when the address is in use.
  Status listen_tcp(const ListenAddress& address, TcpPolicy policy);
  // The bound TCP address ("127.0.0.1:40123", the real port), empty without a TCP listener.
  const std::string& tcp_listen() const { return tcp_listen_; }
  // Wakes event long-polls. Thread-safe.
  void notify_events(int64_t last_seq);
  // Stops accepting; open long-polls answer at once.
  void close();

  // Answers one request (also used by tests without a socket), with `caller`'s rights
  // (api/permissions.h). The default: the daemon's own user, an admin.
  boost::asio::awaitable<Response> handle(const Request& request, Caller caller = {});

 private:
  using UnixSocket = boost::asio::local::stream_protocol::socket;
  using TcpSocket = boost::asio::ip::tcp::socket;

  // An open connection's place in pools_, for as long as its session lives: the session's
  // end gives the place back. Also how a newcomer closes it when it is displaced (it was idle):
  // its pending read is cancelled and the session ends without an answer.
  class ConnectionLease {
   public:
    template <class Socket>
    ConnectionLease(Server& server, ConnectionPools::Id id, Socket& socket);
    ConnectionLease(const ConnectionLease&) = delete;
    ConnectionLease& operator=(const ConnectionLease&) = delete;
    ~ConnectionLease();
    ConnectionPools::Id id() const { return id_; }
    bool displaced() const;

   private:
    Server& server_;
    std::shared_ptr<bool> server_alive_;  // false once the server is destroyed
    ConnectionPools::Id id_;
  };
  struct OpenConnection {
    std::function<void()> cancel;  // cancels the socket's pending operations
    bool displaced = false;
  };

  // The session functions are templates over the socket type (UnixSocket or TcpSocket).
  template <class Acceptor>
  boost::asio::awaitable<void> accept_loop(Acceptor& acceptor);
  template <class Socket>
  boost::asio::awaitable<void> session(Socket socket, ConnectionPools::Id id);
  // Reads one request on `socket` into `request`: the head, judged at once (the TCP policy,
  // the API version; a TCP connection that shows the token moves to the authenticated
  // class), then the body. Returns the answer the head earned instead (a refusal, a static
  // file) in `judged`; false when the session must end (the client left, a deadline passed,
  // the connection was displaced, or an answer that closes it was sent).
  template <class Socket>
  boost::asio::awaitable<bool> read_request(Socket& socket, ConnectionLease& lease,
                                            boost::beast::flat_buffer& buffer, Request& request,
                                            std::optional<Response>& judged);
  // Answers 503 to a connection its class had no place for, then closes it; past
  // kMaxLingeringRefusals refusals in flight, closes it without an answer.
  template <class Socket>
  void refuse(Socket socket, Error why);
  template <class Socket>
  boost::asio::awaitable<void> answer_refusal(Socket socket, Response response);
  // The 503 of a newcomer that `cls` (for unix, `uid`'s share) had no place for.
  Error no_place(ConnectionClass cls, uid_t uid) const;
  // Closes connection `id`, displaced by a newcomer.
  void displace(ConnectionPools::Id id);
  // After a refusal or a displacement: records daemon.connections_refused when the alarm says
  // so (through the queue actor), and sets the timer for the next check.
  void sound_alarm();
  // Writes `response` (an error that ends the connection), then closes the connection
  // gracefully: reads and drops what the client still sends for a while, so that it reads the
  // answer rather than a reset.
  template <class Socket>
  boost::asio::awaitable<void> answer_and_close(Socket& socket, Response response);
  // A request, answered (with the backstop of answer_or_internal_error).
  boost::asio::awaitable<Response> answer(const Request& request, Caller caller);

  boost::asio::awaitable<Response> submit(const Request& request, Caller caller);
  boost::asio::awaitable<Response> submit_sweep(daemon::SweepRequest sweep, std::string user);
  boost::asio::awaitable<Response> cancel(const std::string& ref);
  boost::asio::awaitable<Response> control(const std::string& ref, const std::string& verb,
                                           const Request& request);
  boost::asio::awaitable<Response> submit_plan(const Request& request, Caller caller);
  boost::asio::awaitable<Response> drain(bool draining);
  boost::asio::awaitable<Response> gc(const Request& request);
  boost::asio::awaitable<Response> release_gpu(const std::string& gpu, const Request& request);
  boost::asio::awaitable<Response> events(const Target& target);
  Response metrics();
  Response hooks();
  // GET /v1/me (user_handlers.cc): who the caller is and whether it is an admin.
  Response me(const Caller& caller);
  // POST /v1/dashboard/session (verb "open") and .../revoke: the caller's own dashboard token.
  Response dashboard_session(const std::string& verb, const Caller& caller);
  Response fleet();
  // GET /v1/events/stream (sse.cc): Server-Sent Events on `socket` until the client leaves
  // or the server closes. Instantiated in sse.cc for both socket types.
  template <class Socket>
  boost::asio::awaitable<void> stream_events(Socket& socket, const Request& request,
                                             const Target& target);
  Response show(const std::string& ref, const Caller& caller);
  // GET /v1/arrays/{name or id} (array_handlers.cc).
  Response array(const std::string& ref);
  // POST /v1/arrays/{ref}/move: every waiting element, as one block, in one request.
  boost::asio::awaitable<Response> move_array(const std::string& ref, const Request& request);
  // POST /v1/arrays/{ref}/cancel|hold|release|retry: every element the action applies to, in
  // one request and one transaction (array_actions.cc).
  boost::asio::awaitable<Response> act_on_array(const std::string& ref, const std::string& verb,
                                                const Request& request);
  // A move's body (POST .../move), its before/after job resolved to an id.
  Result<daemon::MoveRequest> move_request(const Request& request);
  // The array `ref` names (its name or id), or a 404 that says so.
  Result<JobArray> find_array(const std::string& ref);
  // Adds each run's "samples" (at most 200, downsampled) to a job's JSON (report_handlers.cc).
  void attach_samples(const Job& job, nlohmann::json& out);
  Response status(const Target& target);
  // The jobs of GET /v1/status (status_jobs.cc): every unfinished job (or, with
  // ?pending_limit=, a page of the pending ones in serving order) and the latest `finished`,
  // each pending job with its ETA and serving position.
  struct StatusList {
    nlohmann::json jobs;
    std::string eta_note;
    int64_t finished_total = 0;
    std::optional<int64_t> pending_total;  // set for a page
    std::optional<int64_t> held_total;     // set for a page with held_limit
    std::optional<int64_t> blocked_total;  // set for a page with held_limit
    nlohmann::json arrays;                 // the arrays with an unfinished element
  };
  Result<StatusList> status_list(const Target& target, std::optional<size_t> finished);
  // The ETAs of the waiting jobs (etas_), loading the unfinished jobs only when the cache
  // cannot answer.
  Result<const EtaCache::Etas*> current_etas(int64_t now_ms);
  // current_etas(), or none when no job of `listed` is pending (none would show one).
  Result<const EtaCache::Etas*> etas_for(const std::vector<Job>& listed, int64_t now_ms);
  // The config an ETA simulates: config.toml's lanes and a lane for each capped array's cap,
  // added to its elements in `jobs` (as the daemon's scheduler counts them).
  Result<daemon::Config> eta_config(std::vector<Job>& jobs);
  // GET /v1/timeline and GET /v1/report (report_handlers.cc; docs/api.md).
  Response timeline(const Target& target);
  Response report(const Target& target);
  Response gpus();
  Response health();
  // GET /v1/health's "http": {"listen", "allow_submit"}, or null without a TCP listener.
  nlohmann::json http_info() const;
  // The watchers' open episodes (docs/api.md, "Health and gpuq check"), as stored.
  nlohmann::json open_episodes(int64_t now_ms);
  Response log(const std::string& ref, const Target& target);
  Result<int64_t> resolve(const std::string& ref);
  // Whether `caller` may make the request `where` routes to (api/permissions.h): the owner of
  // the job or array it names is read from the store.
  Status authorize(const Route& where, const Caller& caller);
  // Who submitted array `array_id` (its elements share a submitter); "" when unknown.
  std::string array_owner(int64_t array_id);
  // The Caller of a unix socket peer (its name, whether it is an admin).
  Caller unix_caller(uid_t uid) const;
  // The Caller of a TCP request that passed the policy: the owner of the session token it
  // shows, or the daemon's own user for the daemon's token; nullopt when what it showed no
  // longer counts (it ended while the body arrived): the request is refused, never run as the
  // daemon's user.
  std::optional<Caller> tcp_caller(const Request& request) const;
  std::vector<nlohmann::json> resource_objects(const std::vector<Resource>& resources);
  void attach_reasons(std::vector<Job>& jobs);
  // A job's JSON with its reason attached (attach_reasons), for the answers of controls.
  nlohmann::json job_with_reason(Job job);

  ServerContext context_;
  ServerLimits limits_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for leases that outlive it
  ConnectionPools pools_;  // every open session (event streams and long-polls included)
  std::unordered_map<ConnectionPools::Id, OpenConnection> open_;
  int lingering_refusals_ = 0;
  RefusalAlarm alarm_{limits::kRefusalEventInterval.count()};
  std::unique_ptr<boost::asio::steady_timer> alarm_timer_;
  bool alarm_armed_ = false;
  std::unique_ptr<store::Store> store_;
  // The unix sockets: the home's, and a system daemon's box socket.
  std::vector<std::unique_ptr<boost::asio::local::stream_protocol::acceptor>> acceptors_;
  std::unique_ptr<boost::asio::ip::tcp::acceptor> tcp_acceptor_;
  std::optional<TcpPolicy> tcp_policy_;  // set with the TCP listener, before the api thread runs
  std::string tcp_listen_;
  std::set<boost::asio::steady_timer*> waiters_;
  EtaCache etas_;
  DirChecker dirs_{2};  // submit's and plan's cwd checks, off both threads
  bool closed_ = false;
};

}  // namespace gpuq::api
