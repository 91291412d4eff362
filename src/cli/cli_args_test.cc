// SPDX-License-Identifier: Apache-2.0
// Command lines that are wrong must fail with exit 2 before anything is sent; a daemon that
// is not running must be reported with exit 3 and the way to start one.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cli/app.h"
#include "cli/gpu_selection.h"
#include "cli/commands.h"
#include "cli/fake_transport.h"

namespace gpuq::cli {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "gpuq-cli-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class CliArgs : public ::testing::Test {
 protected:
  int run(std::vector<std::string> args) {
    std::vector<std::string> full = {"--home", home_.path()};
    full.insert(full.end(), args.begin(), args.end());
    return run_cli(full, hooks_, process_.io);
  }
  // Exit 2, a "gpuq: " message on stderr, and no daemon contacted.
  void expect_usage_error(const std::vector<std::string>& args, std::string_view message_part) {
    SCOPED_TRACE(::testing::PrintToString(args));
    EXPECT_EQ(run(args), kExitUsage);
    EXPECT_EQ(process_.daemon.connects, 0);
    EXPECT_TRUE(process_.daemon.requests.empty());
    EXPECT_TRUE(process_.err.str().starts_with("gpuq: ")) << process_.err.str();
    EXPECT_NE(process_.err.str().find(message_part), std::string::npos) << process_.err.str();
    process_.err.str("");
  }

  TempDir home_;
  Hooks hooks_;
  testing::FakeProcess process_;
};

TEST_F(CliArgs, NegativeGpus) {
  expect_usage_error({"submit", "--gpus", "-1", "--", "true"}, "--gpus must be 0 or more");
  expect_usage_error({"submit", "--gpus=-3", "--", "true"}, "--gpus must be 0 or more");
  expect_usage_error({"submit", "--gpus", "two", "--", "true"}, "--gpus");
}

TEST_F(CliArgs, BadPriority) {
  expect_usage_error({"submit", "--priority", "urgent", "--", "true"}, "bad priority 'urgent'");
  expect_usage_error({"submit", "--priority", "-5", "--", "true"}, "bad priority");
}

TEST_F(CliArgs, NothingToRun) {
  expect_usage_error({"submit"}, "nothing to run");
  expect_usage_error({"submit", "--gpus", "1", "--"}, "nothing to run after '--'");
}

TEST_F(CliArgs, MalformedEnv) {
  expect_usage_error({"submit", "--env", "FOO", "--", "true"}, "bad --env 'FOO'");
  expect_usage_error({"submit", "--env", "=x", "--", "true"}, "bad --env '=x'");
  expect_usage_error({"submit", "--env", "CUDA_VISIBLE_DEVICES=1", "--", "true"},
                     "gpuq sets CUDA_VISIBLE_DEVICES itself");
  expect_usage_error({"submit", "--env", "GPUQ_JOB_ID=3", "--", "true"}, "GPUQ_JOB_ID");
}

TEST_F(CliArgs, UnknownOptionsAndCommands) {
  expect_usage_error({"submit", "--bogus", "--", "true"}, "unknown option --bogus");
  expect_usage_error({"status", "--bogus"}, "--bogus");
  expect_usage_error({"frobnicate"}, "frobnicate");
  expect_usage_error({}, "subcommand");
  EXPECT_EQ(run_cli({}, hooks_, process_.io), kExitUsage);
  EXPECT_NE(process_.err.str().find("submit"), std::string::npos);
  expect_usage_error({"show"}, "job");
  expect_usage_error({"cancel"}, "job");
  expect_usage_error({"status", "extra"}, "extra");
}

// `gpuq --version` prints the version the app gives its hooks, exits 0 and contacts no daemon;
// so does `gpuq --version` after other global options, and it is listed in `gpuq --help`.
TEST_F(CliArgs, VersionFlag) {
  hooks_.version = "gpuq 9.8.7";
  EXPECT_EQ(run_cli({"--version"}, hooks_, process_.io), 0);
  EXPECT_EQ(process_.out.str(), "gpuq 9.8.7\n");
  process_.out.str("");
  EXPECT_EQ(run({"--version"}), 0);
  EXPECT_EQ(process_.out.str(), "gpuq 9.8.7\n");
  EXPECT_EQ(process_.daemon.connects, 0);
  process_.out.str("");
  EXPECT_EQ(run_cli({"--help"}, hooks_, process_.io), 0);
  EXPECT_NE(process_.out.str().find("--version"), std::string::npos) << process_.out.str();
}

TEST_F(CliArgs, BadScripts) {
  expect_usage_error({"submit", home_.path() + "/missing.sh"}, "missing.sh");
  std::string empty = home_.path() + "/empty.sh";
  std::ofstream(empty).close();
  expect_usage_error({"submit", empty}, "empty.sh");
}

TEST_F(CliArgs, BadValuesOfOtherCommands) {
  expect_usage_error({"wait", "7", "--timeout", "5 parsecs"}, "--timeout");
  expect_usage_error({"logs", "7", "--run", "-1"}, "--run");
  expect_usage_error({"events", "--after", "-4"}, "--after");
  expect_usage_error({"submit", "--cwd", home_.path() + "/nowhere", "--", "true"},
                     "no such directory");
}

TEST_F(CliArgs, DaemonChecksGpusAndPassesResolvedFlags) {
  bool called = false;
  hooks_.run_daemon = [&](const DaemonFlags& flags) {
    called = true;
    EXPECT_EQ(flags.home, home_.path());
    EXPECT_EQ(flags.gpus, "fake:2");
    EXPECT_TRUE(flags.detach);
    return 0;
  };
  expect_usage_error({"daemon", "--gpus", "fake:0"}, "bad --gpus 'fake:0'");
  expect_usage_error({"daemon", "--gpus", "0,0"}, "named twice");
  expect_usage_error({"daemon", "--gpus", "gpu1"}, "bad --gpus");
  EXPECT_FALSE(called);
  EXPECT_EQ(run_cli({"daemon", "--home", home_.path(), "--gpus", "fake:2", "--detach"}, hooks_,
                    process_.io),
            0);
  EXPECT_TRUE(called);
}

TEST(GpuSelection, AcceptsTheDocumentedForms) {
  for (const char* ok : {"auto", "none", "fake:1", "fake:8", "0", "0,2,3"}) {
    EXPECT_TRUE(check_gpu_selection(ok)) << ok;
  }
  for (const char* bad : {"", "fake:", "fake:x", "0,", ",1", "1,,2", "-1", "all"}) {
    EXPECT_FALSE(check_gpu_selection(bad)) << bad;
  }
}

TEST_F(CliArgs, HelpExitsZero) {
  EXPECT_EQ(run({"--help"}), 0);
  EXPECT_NE(process_.out.str().find("submit"), std::string::npos);
  EXPECT_EQ(process_.out.str().find("shim"), std::string::npos);
  process_.out.str("");
  EXPECT_EQ(run({"submit", "--help"}), 0);
  EXPECT_NE(process_.out.str().find("--priority"), std::string::npos);
}

// Only the command the line runs gets its options defined: found past gpuq's own options and
// their values, whatever those values say.
TEST_F(CliArgs, TheCommandAfterGpuqsOwnOptionsGetsItsOptions) {
  EXPECT_EQ(run_cli({"--home", "submit", "--url=x", "status", "--help"}, hooks_, process_.io), 0);
  EXPECT_NE(process_.out.str().find("--all"), std::string::npos);
  EXPECT_EQ(process_.out.str().find("--priority"), std::string::npos);
  process_.out.str("");
  EXPECT_EQ(run({"--help"}), 0);
  for (const char* command : {"submit", "status", "fleet", "service", "dashboard"}) {
    EXPECT_NE(process_.out.str().find(command), std::string::npos) << command;
  }
}

TEST(CliMain, ShimGetsItsArgumentsUntouched) {
  std::vector<std::string> seen;
  Hooks hooks;
  hooks.run_shim = [&](int argc, char** argv) {
    seen.assign(argv, argv + argc);
    return 7;
  };
  std::vector<std::string> words = {"gpuq", "shim", "--run-dir=/x y", "--", "-v"};
  std::vector<char*> argv;
  argv.reserve(words.size() + 1);
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  EXPECT_EQ(cli_main(static_cast<int>(words.size()), argv.data(), hooks), 7);
  EXPECT_EQ(seen, (std::vector<std::string>{"shim", "--run-dir=/x y", "--", "-v"}));
}

// The real transport against a home without a daemon.
class NoDaemon : public ::testing::Test {
 protected:
  int run(const std::vector<std::string>& args) {
    Io io = process_io();
    io.out = &out_;
    io.err = &err_;
    return run_cli(args, Hooks{}, io);
  }
  TempDir home_;
  std::ostringstream out_;
  std::ostringstream err_;
};

TEST_F(NoDaemon, MissingSocketSaysHowToStartOne) {
  EXPECT_EQ(run({"--home", home_.path(), "status"}), kExitNoDaemon);
  EXPECT_EQ(err_.str(), "gpuq: no daemon is running for " + home_.path() + " (no socket at " +
                            home_.path() +
                            "/gpuq.sock). Start one with: gpuq daemon --detach "
                            "--home " +
                            home_.path() + "\n");
  EXPECT_EQ(out_.str(), "");
}

TEST_F(NoDaemon, HomeFromTheEnvironmentIsNotRepeated) {
  const char* old = std::getenv("GPUQ_HOME");
  std::string saved = old ? old : "";
  ::setenv("GPUQ_HOME", home_.path().c_str(), 1);
  EXPECT_EQ(run({"gpus"}), kExitNoDaemon);
  if (old)
    ::setenv("GPUQ_HOME", saved.c_str(), 1);
  else
    ::unsetenv("GPUQ_HOME");
  EXPECT_TRUE(err_.str().ends_with("Start one with: gpuq daemon --detach\n")) << err_.str();
}

TEST_F(NoDaemon, EveryClientCommandExitsThree) {
  std::string script = home_.path() + "/job.sh";
  std::ofstream(script) << "#!/bin/bash\necho hi\n";
  for (std::vector<std::string> args :
       std::vector<std::vector<std::string>>{{"submit", script},
                                             {"submit", "--", "true"},
                                             {"show", "7"},
                                             {"logs", "7"},
                                             {"wait", "7"},
                                             {"cancel", "7"},
                                             {"hold", "7"},
                                             {"release", "7"},
                                             {"release", "--attention", "gpu1"},
                                             {"retry", "7"},
                                             {"move", "7", "--top"},
                                             {"drain"},
                                             {"undrain"},
                                             {"events"}}) {
    args.insert(args.begin(), {"--home", home_.path()});
    EXPECT_EQ(run(args), kExitNoDaemon) << ::testing::PrintToString(args);
  }
}

TEST_F(NoDaemon, ReleaseTakesJobsOrAGpuButNotBoth) {
  EXPECT_EQ(run({"--home", home_.path(), "release"}), kExitUsage);
  EXPECT_EQ(run({"--home", home_.path(), "release", "7", "--attention", "gpu1"}), kExitUsage);
  EXPECT_NE(err_.str().find("excludes"), std::string::npos) << err_.str();
}

// `release` counts only jobs and --attention when it checks that one of them was given, not the
// options every command takes.
TEST_F(NoDaemon, ReleaseTakesHomeAndJsonBesideItsJobs) {
  EXPECT_EQ(run({"release", "7", "--home", home_.path()}), kExitNoDaemon) << err_.str();
  EXPECT_EQ(run({"--home", home_.path(), "release", "--json", "--attention", "gpu1"}),
            kExitNoDaemon)
      << err_.str();
  EXPECT_EQ(run({"release", "--home", home_.path(), "--json"}), kExitUsage);
}

TEST_F(NoDaemon, LintNeedsNoDaemon) {
  std::string script = home_.path() + "/job.sh";
  std::ofstream(script) << "#!/bin/bash\n#gpuq gpus=1\necho hi\n";
  EXPECT_EQ(run({"--home", home_.path(), "lint", script}), 0) << out_.str() << err_.str();
  EXPECT_EQ(err_.str(), "");
}

TEST_F(NoDaemon, StaleSocketFileSaysNothingListens) {
  std::string path = home_.path() + "/gpuq.sock";
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ::close(fd);  // the file stays, as after a daemon crash
  EXPECT_EQ(run({"--home", home_.path(), "status"}), kExitNoDaemon);
  EXPECT_NE(err_.str().find("(nothing is listening on " + path + ")"), std::string::npos)
      << err_.str();
}

}  // namespace
}  // namespace gpuq::cli
