// SPDX-License-Identifier: Apache-2.0
// `gpuq service install|uninstall`: the unit's text (each directive a GPU job needs), and what
// the commands write, keep and remove in a scratch unit directory. No systemctl is run.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "cli/fake_transport.h"
#include "cli/service_unit.h"

namespace gpuq::cli {
namespace {

namespace fs = std::filesystem;

bool has_line(const std::string& text, const std::string& line) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l == line) return true;
  }
  return false;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

ServiceUnit user_unit() {
  ServiceUnit unit;
  unit.user = true;
  unit.executable = "/opt/gpuq/bin/gpuq";
  unit.home = "/data/gpuq";
  return unit;
}

TEST(ServiceUnitText, HasWhatAGpuJobNeeds) {
  std::string text = render_service_unit(user_unit());
  for (const char* line : {"[Unit]", "[Service]", "[Install]", "Type=simple",
                           "ExecStart=/opt/gpuq/bin/gpuq daemon --home /data/gpuq",
                           "KillMode=process", "Delegate=yes",
                           "Restart=always", "RestartSec=2",
                           "LimitMEMLOCK=infinity", "LimitNOFILE=1048576", "TimeoutStopSec=30",
                           "TasksMax=infinity", "OOMPolicy=continue", "WantedBy=default.target"}) {
    EXPECT_TRUE(has_line(text, line)) << "missing " << line << " in\n" << text;
  }
  EXPECT_NE(text.find("Description="), std::string::npos);
  EXPECT_EQ(text.find("User="), std::string::npos) << "a user unit runs as its user";
  // Debian 12's systemd (252) warns of DelegateSubgroup= (254+) as an unknown key.
  EXPECT_FALSE(has_line(text, "DelegateSubgroup=daemon")) << text;
  // The comments say why KillMode=process and where the daemon must run.
  EXPECT_NE(text.find("re-adopted"), std::string::npos);
  EXPECT_NE(text.find("PID namespace"), std::string::npos);
}

TEST(ServiceUnitText, SystemUnitRunsAsItsUserAndTakesOptions) {
  ServiceUnit unit;
  unit.executable = "/usr/bin/gpuq";
  unit.gpus = "0,2";
  unit.run_as = "ml";
  unit.environment = {"HTTPS_PROXY=http://proxy:3128", "NOTE=50% of a b"};
  unit.documentation = "file:/usr/share/doc/gpuq/runbook.md";
  ASSERT_TRUE(check_service_unit(unit));
  std::string text = render_service_unit(unit);
  EXPECT_TRUE(has_line(text, "ExecStart=/usr/bin/gpuq daemon --gpus 0,2")) << text;
  EXPECT_TRUE(has_line(text, "User=ml")) << text;
  EXPECT_TRUE(has_line(text, "WantedBy=multi-user.target")) << text;
  EXPECT_TRUE(has_line(text, "Environment=HTTPS_PROXY=http://proxy:3128")) << text;
  EXPECT_TRUE(has_line(text, "Environment=\"NOTE=50%% of a b\"")) << text;
  EXPECT_TRUE(has_line(text, "Documentation=file:/usr/share/doc/gpuq/runbook.md")) << text;
}

TEST(ServiceUnitText, TheBoxsUnitRunsTheSystemDaemonAsRoot) {
  ServiceUnit unit;
  unit.executable = "/usr/bin/gpuq";
  unit.home = "/var/lib/gpuq";
  unit.system = true;
  unit.run_as = "root";
  ASSERT_TRUE(check_service_unit(unit));
  std::string text = render_service_unit(unit);
  EXPECT_TRUE(has_line(text, "ExecStart=/usr/bin/gpuq daemon --system --home /var/lib/gpuq")) << text;
  EXPECT_EQ(text.find("User="), std::string::npos) << text;
}

TEST(ServiceUnitText, QuotesWordsForSystemd) {
  EXPECT_EQ(systemd_quote("/usr/bin/gpuq"), "/usr/bin/gpuq");
  EXPECT_EQ(systemd_quote("/home/a b/gpuq"), "\"/home/a b/gpuq\"");
  EXPECT_EQ(systemd_quote("/x/100%/$HOME"), "/x/100%%/$$HOME");
  EXPECT_EQ(systemd_quote("say \"hi\""), "\"say \\\"hi\\\"\"");
  EXPECT_EQ(systemd_quote(""), "\"\"");
}

TEST(ServiceUnitText, RefusesWhatSystemdWouldMisread) {
  ServiceUnit unit = user_unit();
  unit.executable = "gpuq";
  EXPECT_FALSE(check_service_unit(unit));
  unit = user_unit();
  unit.home = "relative/home";
  EXPECT_FALSE(check_service_unit(unit));
  unit = user_unit();
  unit.environment = {"NOEQUALS"};
  EXPECT_FALSE(check_service_unit(unit));
  unit = user_unit();
  unit.environment = {"A=line\nbreak"};
  EXPECT_FALSE(check_service_unit(unit));
  unit = user_unit();
  unit.user = false;
  unit.run_as = "root; rm";
  EXPECT_FALSE(check_service_unit(unit));
  unit.run_as = "ml-team_2";
  EXPECT_TRUE(check_service_unit(unit));
}

TEST(ServiceUnitDir, UserUnitsFollowXdgConfigHome) {
  EXPECT_EQ(*service_unit_dir(true, "", {"HOME=/home/me"}), "/home/me/.config/systemd/user");
  EXPECT_EQ(*service_unit_dir(true, "", {"HOME=/home/me", "XDG_CONFIG_HOME=/cfg"}),
            "/cfg/systemd/user");
  EXPECT_EQ(*service_unit_dir(false, "", {"HOME=/home/me"}), "/etc/systemd/system");
  EXPECT_EQ(*service_unit_dir(false, "/pkg/lib/systemd/system", {}), "/pkg/lib/systemd/system");
  EXPECT_FALSE(service_unit_dir(true, "", {}));
}

TEST(ServiceUnitDir, APermissionErrorOnTheSystemDirectorySaysSudoOrUser) {
  std::string message = service_write_error("/etc/systemd/system/gpuq.service", EACCES, true);
  EXPECT_NE(message.find("/etc/systemd/system/gpuq.service"), std::string::npos) << message;
  EXPECT_NE(message.find("sudo"), std::string::npos) << message;
  EXPECT_NE(message.find("--user"), std::string::npos) << message;
  EXPECT_EQ(service_write_error("/x/gpuq.service", EACCES, false).find("sudo"), std::string::npos);
}

// The commands, through the real command line, in a scratch unit directory.
class ServiceCommand : public testing::ScriptedCli {
 protected:
  std::string unit_path() const { return dir_.path() + "/gpuq.service"; }
  int install(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"service", "install", "--user", "--unit-dir", dir_.path()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  }
  void clear_output() {
    process_.out.str("");
    process_.err.str("");
  }
  testing::TempDir dir_;
};

TEST_F(ServiceCommand, PrintWritesNothing) {
  EXPECT_EQ(install({"--print"}), kExitOk) << err();
  EXPECT_NE(out().find("KillMode=process"), std::string::npos) << out();
  EXPECT_NE(out().find(" daemon --home /tmp/gpuq-fake-home"), std::string::npos) << out();
  EXPECT_FALSE(fs::exists(unit_path()));
  EXPECT_TRUE(fs::is_empty(dir_.path()));
  EXPECT_TRUE(process_.daemon.requests.empty());
}

TEST_F(ServiceCommand, WritesTheUnitAndSaysWhatToRunNext) {
  EXPECT_EQ(install({"--gpus", "fake:2"}), kExitOk) << err();
  std::string text = read_file(unit_path());
  EXPECT_NE(text.find("--gpus fake:2"), std::string::npos) << text;
  EXPECT_NE(text.find("ExecStart=/"), std::string::npos) << "an absolute binary\n" << text;
  EXPECT_EQ(fs::status(unit_path()).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                fs::perms::others_read);
  EXPECT_NE(out().find("wrote " + unit_path()), std::string::npos) << out();
  EXPECT_NE(out().find("systemctl --user daemon-reload && systemctl --user enable --now gpuq"),
            std::string::npos)
      << out();
  EXPECT_NE(out().find("loginctl enable-linger"), std::string::npos) << out();
  EXPECT_TRUE(process_.daemon.requests.empty());
  // Nothing but the unit is left in the directory (the temporary file was renamed).
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_.path()), fs::directory_iterator()), 1);
}

TEST_F(ServiceCommand, InstallingTheSameUnitAgainIsFine) {
  ASSERT_EQ(install(), kExitOk) << err();
  clear_output();
  EXPECT_EQ(install(), kExitOk) << err();
  EXPECT_NE(out().find("already installed"), std::string::npos) << out();
}

TEST_F(ServiceCommand, ADifferentUnitNeedsForce) {
  ASSERT_EQ(install(), kExitOk) << err();
  std::string before = read_file(unit_path());
  clear_output();
  EXPECT_EQ(install({"--gpus", "0"}), kExitFailed);
  EXPECT_NE(err().find(unit_path()), std::string::npos) << err();
  EXPECT_NE(err().find("--force"), std::string::npos) << err();
  EXPECT_EQ(read_file(unit_path()), before);
  clear_output();
  EXPECT_EQ(install({"--gpus", "0", "--force"}), kExitOk) << err();
  EXPECT_NE(read_file(unit_path()).find("--gpus 0"), std::string::npos);
}

TEST_F(ServiceCommand, AHomeWithBlanksIsQuotedForSystemdAndForTheShell) {
  EXPECT_EQ(install({"--home", "/tmp/my home/100%"}), kExitOk) << err();
  std::string text = read_file(unit_path());
  EXPECT_NE(text.find(" daemon --home \"/tmp/my home/100%%\"\n"), std::string::npos) << text;
  EXPECT_NE(out().find("gpuq --home '/tmp/my home/100%' status"), std::string::npos) << out();
}

TEST_F(ServiceCommand, SystemUnitRunsAsTheGivenUser) {
  EXPECT_EQ(run({"service", "install", "--unit-dir", dir_.path(), "--run-as", "ml"}), kExitOk)
      << err();
  std::string text = read_file(unit_path());
  EXPECT_TRUE(has_line(text, "User=ml")) << text;
  EXPECT_TRUE(has_line(text, "WantedBy=multi-user.target")) << text;
  EXPECT_NE(out().find("systemctl daemon-reload && systemctl enable --now gpuq"), std::string::npos)
      << out();
  EXPECT_EQ(out().find("enable-linger"), std::string::npos) << out();
}

// A package's unit: the binary it names is not installed yet; its runbook will be beside it.
TEST_F(ServiceCommand, APackagesUnitNamesTheGivenExecutableAndItsInstalledRunbook) {
  EXPECT_EQ(run({"service", "install", "--print", "--run-as", "gpuq", "--home", "/var/lib/gpuq",
                 "--executable", "/usr/bin/gpuq"}),
            kExitOk)
      << err();
  EXPECT_TRUE(has_line(out(), "ExecStart=/usr/bin/gpuq daemon --home /var/lib/gpuq")) << out();
  EXPECT_TRUE(has_line(out(), "Documentation=file:/usr/share/doc/gpuq/runbook.md")) << out();
  EXPECT_TRUE(has_line(out(), "User=gpuq")) << out();
  expect_usage_error({"service", "install", "--print", "--executable", "gpuq"}, "absolute");
}

TEST_F(ServiceCommand, BadOptionsAreUsageErrors) {
  expect_usage_error({"service", "install", "--user", "--run-as", "ml", "--print"}, "--run-as");
  expect_usage_error({"service", "install", "--user", "--gpus", "two", "--print"}, "--gpus");
  expect_usage_error({"service", "install", "--user", "--env", "NOVALUE", "--print"}, "--env");
  expect_usage_error({"service"}, "");
  EXPECT_TRUE(fs::is_empty(dir_.path()));
}

TEST_F(ServiceCommand, UninstallRemovesTheUnit) {
  ASSERT_EQ(install(), kExitOk) << err();
  clear_output();
  EXPECT_EQ(run({"service", "uninstall", "--user", "--unit-dir", dir_.path()}), kExitOk) << err();
  EXPECT_FALSE(fs::exists(unit_path()));
  EXPECT_NE(out().find("removed " + unit_path()), std::string::npos) << out();
  EXPECT_NE(out().find("systemctl --user daemon-reload"), std::string::npos) << out();
  clear_output();
  EXPECT_EQ(run({"service", "uninstall", "--user", "--unit-dir", dir_.path()}), kExitOk) << err();
  EXPECT_NE(out().find("not installed"), std::string::npos) << out();
}

TEST_F(ServiceCommand, UninstallOfAnEnabledUnitSaysDisableFirst) {
  ASSERT_EQ(install(), kExitOk) << err();
  fs::create_directories(dir_.path() + "/default.target.wants");
  fs::create_symlink(unit_path(), dir_.path() + "/default.target.wants/gpuq.service");
  clear_output();
  EXPECT_EQ(run({"service", "uninstall", "--user", "--unit-dir", dir_.path()}), kExitFailed);
  EXPECT_NE(err().find("systemctl --user disable --now gpuq"), std::string::npos) << err();
  EXPECT_TRUE(fs::exists(unit_path()));
  EXPECT_EQ(run({"service", "uninstall", "--user", "--unit-dir", dir_.path(), "--force"}), kExitOk)
      << err();
  EXPECT_FALSE(fs::exists(unit_path()));
}

// systemd's own reading of the unit, where systemd-analyze is installed. A system unit (the
// user manager is not reachable from a test) for the user running the test.
TEST_F(ServiceCommand, SystemdAnalyzeAcceptsTheUnit) {
  if (std::system("command -v systemd-analyze >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "systemd-analyze is not installed";
  }
  ASSERT_EQ(
      run({"service", "install", "--unit-dir", dir_.path(), "--run-as", "root", "--env", "A=b c"}),
      kExitOk)
      << err();
  std::string command = "timeout 60 systemd-analyze verify " + unit_path() + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[512];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  int status = ::pclose(pipe);
  if (output.find("Failed to initialize manager") != std::string::npos) {
    GTEST_SKIP() << "systemd-analyze cannot run here: " << output;
  }
  EXPECT_EQ(status, 0) << output;
  // It reports a line it does not accept as "FILE:LINE: ..." and still exits 0.
  EXPECT_EQ(output.find(unit_path() + ":"), std::string::npos) << output;
}

}  // namespace
}  // namespace gpuq::cli
