// SPDX-License-Identifier: Apache-2.0
#include "app/fleet_node.h"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

#include "cli/fleet_commands.h"
#include "fleet/layout.h"

namespace gpuq::app {
namespace {

std::string host_name() {
  char buffer[256] = {};
  if (::gethostname(buffer, sizeof buffer - 1) != 0) return "node";
  std::string name(buffer);
  return name.substr(0, name.find('.'));
}

// How often the dashboard's Fleet page reads the bucket while somebody looks at it.
constexpr int64_t kFleetViewRefreshMs = 15'000;

std::string home_directory() {
  if (const char* home = std::getenv("HOME"); home && *home == '/') return home;
  if (const passwd* pw = ::getpwuid(::geteuid()); pw && pw->pw_dir) return pw->pw_dir;
  return "/";
}

}  // namespace

Result<std::unique_ptr<FleetNode>> FleetNode::join(const cli::DaemonFlags& flags, const config::FleetConfig& configured,
                                                   const HomeLayout& layout, boost::asio::io_context& actor,
                                                   daemon::Queue& queue, const std::string& version) {
  std::string url = flags.fleet;
  if (url.empty()) {
    const char* variable = std::getenv("GPUQ_FLEET");
    url = variable ? variable : configured.url;
  }
  if (url.empty()) return std::unique_ptr<FleetNode>();
  std::unique_ptr<FleetNode> node(new FleetNode());
  node->url_ = url;
  node->node_ = !flags.node.empty() ? flags.node : !configured.node.empty() ? configured.node : host_name();
  if (auto valid = fleet::check_name("node", node->node_); !valid) {
    return fail(Code::kInvalidArgument, valid.error().message + " (give --node NAME)");
  }
  std::vector<std::string> classes = flags.classes.empty() ? configured.classes : flags.classes;
  for (const auto& klass : classes) {
    if (auto valid = fleet::check_name("class", klass); !valid) return tl::unexpected(valid.error());
  }
  auto options = cli::fleet_store_options(configured);
  // The claims' store: every call, retries included, ends within a sixth of the lease, so a
  // holder that cannot reach the bucket notices well before lease/3 and stops its runs.
  fleet::StoreOptions control = options;
  control.timeout_ms = std::max<int64_t>(std::min(options.timeout_ms, configured.lease_ms / 12), 100);
  control.retries = static_cast<int>(std::clamp<int64_t>(configured.lease_ms / 6 / control.timeout_ms - 1, 0, options.retries));
  auto store = fleet::open_store(url, control);
  if (!store) return fail(store.error().code, fmt::format("--fleet {}: {}", url, store.error().message));
  node->store_ = std::move(*store);
  // A store that ignores If-None-Match or If-Match would let two nodes run one job.
  std::string scratch = fmt::format("nodes/{}/conditions-check-{}", node->node_, fleet::random_token());
  if (auto verified = fleet::verify_conditional_writes(*node->store_, scratch); !verified) {
    return fail(verified.error().code, fmt::format("--fleet {}: {}", url, verified.error().message));
  }
  fleet::AgentOptions agent;
  agent.node = node->node_;
  agent.classes = classes;
  agent.heartbeat_ms = configured.heartbeat_ms;
  agent.poll_ms = configured.poll_ms;
  agent.lease_ms = configured.lease_ms;
  agent.sync_every_ms = configured.sync_every_ms;
  agent.workdir = configured.workdir.empty() ? home_directory() : configured.workdir;
  agent.min_free_disk_bytes = configured.min_free_disk_bytes;
  agent.state_file = layout.home + "/fleet-claims.json";
  agent.claim_deadline_dir = layout.home + "/fleet-deadlines";
  agent.version = version;
  // A fleet job starts from the node's everyday variables, never from the daemon's whole
  // environment (which may hold the store's credentials).
  for (const char* name : {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "TZ", "TMPDIR"}) {
    if (const char* value = std::getenv(name)) agent.base_env[name] = value;
  }
  // Declared data goes through a store of its own with the configured timeout (objects may be
  // large): PREFIX/data/ of the fleet's store, or [fleet] data.
  fleet::ObjectStore* data = nullptr;
  fleet::StoreOptions data_options = options;
  data_options.abort = node->abort_transfers_;
  const std::string data_url = configured.data.empty() ? url : configured.data;
  auto data_store = fleet::open_store(data_url, data_options);
  if (data_store) {
    node->data_store_ = std::move(*data_store);
    data = node->data_store_.get();
    if (!configured.data.empty()) agent.data_prefix = "";
    // Pulls and pushes run on workers of their own (each with its own store), never on the
    // agent's thread; a worker that finishes one wakes the agent.
    FleetNode* raw = node.get();
    auto transfers = fleet::ThreadTransferQueue::start(
        kTransferWorkers, [data_url, data_options] { return fleet::open_store(data_url, data_options); },
        [raw] { raw->nudge_agent(); });
    if (!transfers) return fail(transfers.error().code, fmt::format("[fleet] data {}: {}", data_url, transfers.error().message));
    node->transfers_ = std::move(*transfers);
  } else {
    agent.data_problem = fmt::format("[fleet] data = {}: {}", configured.data, data_store.error().message);
  }
  // The dashboard's view of the fleet reads through a store of its own, with the configured
  // timeout: its readings wait for nothing else and nothing waits for them.
  auto view_store = fleet::open_store(url, options);
  if (!view_store) return fail(view_store.error().code, fmt::format("--fleet {}: {}", url, view_store.error().message));
  node->view_ = std::make_unique<FleetView>(std::move(*view_store), url, node->node_,
                                            std::chrono::milliseconds(kFleetViewRefreshMs));
  node->executor_ = std::make_unique<FleetExecutor>(actor, queue, agent.workdir);
  node->agent_ = std::make_unique<fleet::Agent>(*node->store_, data, *node->executor_, agent, node->transfers_.get());
  return node;
}

FleetNode::~FleetNode() { stop(); }

void FleetNode::start() {
  {
    std::lock_guard lock(thread_mutex_);
    thread_ = std::make_unique<fleet::AgentThread>(*agent_);
  }
  thread_->start();
}

void FleetNode::close() {
  if (executor_) executor_->close();
  if (thread_) thread_->request_stop();
}

void FleetNode::stop() {
  close();
  if (view_) view_->stop();
  // Transfers in flight end now; what they moved is moved again by whoever runs the job next.
  abort_transfers_->store(true);
  if (thread_) thread_->stop();
  transfers_.reset();  // its workers may nudge the agent's thread until they are joined
  thread_.reset();
}

void FleetNode::nudge_agent() {
  std::lock_guard lock(thread_mutex_);
  if (thread_) thread_->nudge();
}

std::string FleetNode::describe() const { return fmt::format("{} as node {}", url_, node_); }

}  // namespace gpuq::app
