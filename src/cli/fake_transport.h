// SPDX-License-Identifier: Apache-2.0
// Test support: a Transport whose answers a test scripts, and an Io around string streams and
// fake clocks, so that client commands run without a daemon, a terminal or real time.
// Not part of the gpuq_cli library; included by cli tests only. One thread.
#pragma once

#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/app.h"
#include "cli/exit_codes.h"
#include "cli/context.h"
#include "cli/transport.h"

namespace gpuq::cli::testing {

using Handler = std::function<Result<HttpResponse>(const HttpRequest&)>;

// Everything the fake daemon was asked, in order, shared with the transports it made.
struct FakeDaemon {
  Handler handler;
  std::vector<HttpRequest> requests;
  int connects = 0;
};

class FakeTransport final : public Transport {
 public:
  explicit FakeTransport(FakeDaemon& daemon) : daemon_(daemon) {}
  Result<HttpResponse> send(const HttpRequest& request) override {
    daemon_.requests.push_back(request);
    if (!daemon_.handler) return fail(Code::kUnavailable, "no socket at /fake/gpuq.sock");
    return daemon_.handler(request);
  }

 private:
  FakeDaemon& daemon_;
};

inline HttpResponse json_answer(long status, std::string body,
                                std::map<std::string, std::string> headers = {}) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

// An Io writing to `out`/`err`, reaching `daemon`, with clocks that only move when slept on
// or advanced by a test.
struct FakeProcess {
  FakeDaemon daemon;
  std::ostringstream out;
  std::ostringstream err;
  int64_t wall = 1'795'949'736'123;  // 2026-11-29T10:55:36.123Z
  int64_t steady = 1'000'000;
  std::vector<Millis> sleeps;
  Io io;

  FakeProcess() {
    io.out = &out;
    io.err = &err;
    io.color = false;
    io.connect = [this](const std::string&) -> Result<std::unique_ptr<Transport>> {
      ++daemon.connects;
      return std::unique_ptr<Transport>(new FakeTransport(daemon));
    };
    io.wall_ms = [this] { return wall; };
    io.steady_ms = [this] { return steady; };
    io.sleep = [this](Millis d) {
      sleeps.push_back(d);
      wall += d.count();
      steady += d.count();
    };
    io.environ = {"PATH=/usr/bin:/bin", "HOME=/home/me"};
    io.cwd = "/tmp";
    io.login = [] { return std::string("me"); };
  }
  FakeProcess(const FakeProcess&) = delete;
  FakeProcess& operator=(const FakeProcess&) = delete;
};

// A scratch directory for files a test hands to the CLI; removed with it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "gpuq-cli-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string write(const std::string& name, const std::string& text) const {
    std::string file = path_ + "/" + name;
    std::ofstream(file) << text;
    return file;
  }

 private:
  std::string path_;
};

// A test fixture that runs the CLI against a FakeProcess whose daemon answers a script.
class ScriptedCli : public ::testing::Test {
 protected:
  int run(std::vector<std::string> args) {
    args.insert(args.begin(), {"--home", "/tmp/gpuq-fake-home"});
    return run_cli(args, Hooks{}, process_.io);
  }
  // Answers requests in order; fails the test on an unexpected target.
  void script(std::vector<std::pair<std::string, Result<HttpResponse>>> steps) {
    steps_.assign(steps.begin(), steps.end());
    process_.daemon.handler = [this](const HttpRequest& request) -> Result<HttpResponse> {
      if (steps_.empty()) {
        ADD_FAILURE() << "unexpected request " << request.target;
        return fail(Code::kIoError, "unexpected");
      }
      auto [target, answer] = steps_.front();
      steps_.pop_front();
      EXPECT_EQ(request.target, target);
      return answer;
    };
  }
  std::string out() const { return process_.out.str(); }
  std::string err() const { return process_.err.str(); }
  // Exit 2, a "gpuq: " message on stderr, and nothing sent.
  void expect_usage_error(const std::vector<std::string>& args, std::string_view message_part) {
    SCOPED_TRACE(::testing::PrintToString(args));
    process_.daemon.requests.clear();
    EXPECT_EQ(run(args), kExitUsage);
    EXPECT_TRUE(process_.daemon.requests.empty());
    EXPECT_TRUE(err().starts_with("gpuq: ")) << err();
    EXPECT_NE(err().find(message_part), std::string::npos) << err();
    process_.err.str("");
  }
  // The JSON body of the i-th request sent, or null.
  Json sent_body(size_t i = 0) const {
    if (i >= process_.daemon.requests.size()) return Json();
    return Json::parse(process_.daemon.requests[i].body, nullptr, false);
  }

  FakeProcess process_;
  std::deque<std::pair<std::string, Result<HttpResponse>>> steps_;
};

}  // namespace gpuq::cli::testing
