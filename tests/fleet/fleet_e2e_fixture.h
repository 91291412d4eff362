// SPDX-License-Identifier: Apache-2.0
// The fixture of the fleet's end-to-end tests (fleet_e2e_test.cc, fleet_data_e2e_test.cc): an
// S3 server of the test's own (moto), a temporary directory with a shared folder and scripts,
// nodes started on demand (FleetDaemon), and `gpuq fleet` run as from a machine with no daemon.
// Every helper waits for a known state with a deadline; none asserts a time.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fleet/client.h"
#include "fleet/layout.h"
#include "fleet_daemon.h"
#include "s3_server.h"
#include "tcp_proxy.h"

namespace gpuq::fleet::e2e {

namespace fs = std::filesystem;
using testing::FleetDaemon;
using testing::FleetDaemonOptions;
using testing::read_lines;
using testing::read_pid;
using testing::S3Server;
using testing::wait_until;

constexpr int kWaitMs = 60'000;  // a generous deadline for any state a test waits for

inline int64_t wall_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}
inline int64_t mono_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

class FleetE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = S3Server::start();
    if (!server && server.error().code == Code::kFailedPrecondition) GTEST_SKIP() << server.error().message;
    ASSERT_TRUE(server) << server.error().message;
    server_ = std::move(*server);
    char dir[] = "/tmp/gpuq-fe2e-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    root_ = dir;
    fs::create_directories(root_ + "/cli-home");
    fs::create_directories(root_ + "/shared");
    fs::create_directories(root_ + "/scripts");
    url_ = server_->url("fleet");
    auto store = open_store(url_, server_->options());
    ASSERT_TRUE(store) << store.error().message;
    store_ = std::move(*store);
  }

  void TearDown() override {
    nodes_.clear();  // each stops its daemon and kills what is left of its node
    proxies_.clear();
    std::error_code ec;
    if (!root_.empty() && std::getenv("GPUQ_KEEP_TEST_DIRS") == nullptr) fs::remove_all(root_, ec);
  }

  // Starts a node (short timings unless `short_timings` is false) whose store is reached at
  // `endpoint` (default: the server itself).
  FleetDaemon& node(const std::string& name, std::vector<std::string> classes = {}, std::string endpoint = "",
                    bool short_timings = true, std::string fleet_config = "") {
    FleetDaemonOptions options;
    options.fleet_config = std::move(fleet_config);
    options.node = name;
    options.classes = std::move(classes);
    options.url = url_;
    options.store = server_->options();
    if (!endpoint.empty()) options.store.endpoint = endpoint;
    options.short_timings = short_timings;
    options.lease = lease_;
    nodes_.push_back(std::make_unique<FleetDaemon>(root_ + "/" + name, options));
    FleetDaemon& daemon = *nodes_.back();
    auto started = daemon.start();
    EXPECT_TRUE(started) << started.error().message;
    return daemon;
  }

  std::string shared(const std::string& name) const { return root_ + "/shared/" + name; }

  // A job script: a shell script with `body` after its first line.
  std::string script(const std::string& name, const std::string& body) const {
    std::string path = root_ + "/scripts/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body;
    return path;
  }
  // A script that appends "FLEET_ID NODE ATTEMPT" to shared/ran.txt.
  std::string recording_script(const std::string& name, const std::string& more = "") const {
    return script(name, fmt::format("echo \"$GPUQ_FLEET_ID $GPUQ_FLEET_NODE $GPUQ_FLEET_ATTEMPT\" >> {}\n{}",
                                    shared("ran.txt"), more));
  }

  // `gpuq fleet ARGS --fleet URL` from a machine with no daemon.
  testing::CliOutput fleet(std::vector<std::string> args) const {
    return testing::fleet_cli(root_ + "/cli-home", url_, server_->options(), std::move(args));
  }
  nlohmann::json fleet_json(std::vector<std::string> args) const {
    args.push_back("--json");
    auto out = fleet(args);
    EXPECT_EQ(out.status, 0) << out.out << out.err;
    auto json = nlohmann::json::parse(out.out, nullptr, false);
    EXPECT_FALSE(json.is_discarded()) << "not JSON: " << out.out << out.err;
    return json;
  }
  // `gpuq fleet submit ARGS --json`: the ids, in order.
  std::vector<std::string> submit(std::vector<std::string> args) const {
    args.insert(args.begin(), "submit");
    std::vector<std::string> ids;
    for (const auto& job : fleet_json(args)) ids.push_back(job.value("id", ""));
    return ids;
  }

  // Submits to class `klass` a job whose first attempt runs until it is killed (its shell's
  // pid in shared/pid.1) and whose next attempt succeeds at once; waits until attempt 1 runs.
  void submit_until_killed(const std::string& klass, std::string& id, int& first) const {
    std::string file = recording_script(
        "long.sh", fmt::format("echo $$ > {}.$GPUQ_FLEET_ATTEMPT\n"
                               "if [ \"$GPUQ_FLEET_ATTEMPT\" = 1 ]; then while :; do sleep 0.05; done; fi\n",
                               shared("pid")));
    auto ids = submit({"--class", klass, file});
    ASSERT_EQ(ids.size(), 1u);
    id = ids[0];
    ASSERT_TRUE(wait_until([&] { return (first = read_pid(shared("pid.1"))) > 0; }, kWaitMs)) << "attempt 1 never ran";
  }

  std::optional<Claim> claim(const std::string& id) const {
    auto read = read_claim(*store_, id);
    if (!read || !*read) return std::nullopt;
    return (*read)->claim;
  }
  std::string claim_text(const std::string& id) const {
    auto c = claim(id);
    return c ? to_json(*c).dump() : "none";
  }
  bool claim_is(const std::string& id, std::string_view state) const {
    auto c = claim(id);
    return c && c->state == state;
  }
  std::optional<nlohmann::json> status_node(const std::string& name) const {
    auto status = fleet_json({"status"});
    for (const auto& n : status.value("nodes", nlohmann::json::array())) {
      if (n.value("name", "") == name) return n;
    }
    return std::nullopt;
  }
  bool stale(const std::string& name) const {
    auto n = status_node(name);
    return n && n->value("stale", false);
  }

  std::unique_ptr<S3Server> server_;
  std::string root_;
  std::string url_;
  std::string lease_ = "3s";  // of the nodes node() starts next (FleetDaemonOptions::lease)
  std::unique_ptr<ObjectStore> store_;
  std::vector<std::unique_ptr<FleetDaemon>> nodes_;
  std::vector<std::unique_ptr<testing::TcpProxy>> proxies_;
};

}  // namespace gpuq::fleet::e2e
