// SPDX-License-Identifier: Apache-2.0
// The CLI over TCP, against a scripted daemon: `gpuq --url/--token` (and $GPUQ_URL,
// $GPUQ_TOKEN, the home's token file), the URL's form, and `gpuq dashboard`.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/fake_transport.h"

namespace gpuq::cli {
namespace {

using testing::json_answer;

const std::string kToken(64, 'c');

class Remote : public testing::ScriptedCli {
 protected:
  Remote() {
    process_.io.connect_tcp = [this](const DaemonUrl& url, const std::string& token)
        -> Result<std::unique_ptr<Transport>> {
      urls.push_back(url);
      tokens.push_back(token);
      return std::unique_ptr<Transport>(new testing::FakeTransport(process_.daemon));
    };
    process_.io.open_url = [this](const std::string& url) {
      opened.push_back(url);
      return true;
    };
  }
  // Runs with `home` instead of the fixture's home.
  int run_in(const std::string& home, std::vector<std::string> args) {
    args.insert(args.begin(), {"--home", home});
    return run_cli(args, Hooks{}, process_.io);
  }
  void status_script() { script({{"/v1/status?pending_limit=100&arrays=collapse", json_answer(200, R"({"jobs":[],"resources":[]})")}}); }
  void health_script(const std::string& http) {
    script({{"/v1/health", json_answer(200, R"({"ok":true,"http":)" + http + "}")}});
  }

  std::vector<DaemonUrl> urls;
  std::vector<std::string> tokens;
  std::vector<std::string> opened;
};

TEST(ParseDaemonUrl, Forms) {
  auto plain = parse_daemon_url("http://127.0.0.1:7878");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->base, "http://127.0.0.1:7878");
  EXPECT_EQ(plain->authority, "127.0.0.1:7878");
  auto slash = parse_daemon_url("http://[::1]:7878/");
  ASSERT_TRUE(slash);
  EXPECT_EQ(slash->base, "http://[::1]:7878");
  EXPECT_EQ(slash->authority, "[::1]:7878");
  for (const char* bad : {"", "127.0.0.1:7878", "https://box:7878", "http://", "http://box/v1", "http://a@b"}) {
    auto refused = parse_daemon_url(bad);
    ASSERT_FALSE(refused) << bad;
    EXPECT_NE(refused.error().message.find("http://HOST:PORT"), std::string::npos);
  }
}

TEST_F(Remote, UrlAndTokenFlagsGoOverTcp) {
  status_script();
  EXPECT_EQ(run({"--url", "http://127.0.0.1:7878/", "--token", kToken, "status"}), kExitOk) << err();
  ASSERT_EQ(urls.size(), 1u);
  EXPECT_EQ(urls[0].base, "http://127.0.0.1:7878");
  EXPECT_EQ(tokens[0], kToken);
  EXPECT_EQ(process_.daemon.connects, 0);  // never the unix socket
}

TEST_F(Remote, TheEnvironmentNamesThemToo) {
  process_.io.environ.push_back("GPUQ_URL=http://box.lan:7878");
  process_.io.environ.push_back("GPUQ_TOKEN=" + kToken);
  status_script();
  EXPECT_EQ(run({"status"}), kExitOk) << err();
  ASSERT_EQ(urls.size(), 1u);
  EXPECT_EQ(urls[0].authority, "box.lan:7878");
  EXPECT_EQ(tokens[0], kToken);
}

TEST_F(Remote, WithoutATokenTheHomesTokenFile) {
  testing::TempDir home;
  home.write("token", kToken + "\n");
  status_script();
  EXPECT_EQ(run_in(home.path(), {"--url", "http://127.0.0.1:1", "status"}), kExitOk) << err();
  ASSERT_EQ(tokens.size(), 1u);
  EXPECT_EQ(tokens[0], kToken);
}

TEST_F(Remote, AnUnreachableUrlIsNamed) {
  script({{"/v1/status?pending_limit=100&arrays=collapse", fail(Code::kUnavailable, "nothing is listening on http://127.0.0.1:1")}});
  EXPECT_EQ(run({"--url", "http://127.0.0.1:1", "--token", kToken, "status"}), kExitNoDaemon);
  EXPECT_NE(err().find("no daemon answers at http://127.0.0.1:1"), std::string::npos) << err();
}

TEST_F(Remote, BadUsageSendsNothing) {
  expect_usage_error({"--url", "https://box:7878", "status"}, "plain http");
  expect_usage_error({"--url", "box:7878", "status"}, "http://HOST:PORT");
  expect_usage_error({"--token", kToken, "status"}, "--token goes with --url");
  EXPECT_TRUE(urls.empty());
}

TEST_F(Remote, DashboardPrintsTheLinkWithTheHomesToken) {
  testing::TempDir home;
  home.write("token", kToken + "\n");
  health_script(R"({"listen":"127.0.0.1:7878","allow_submit":false})");
  EXPECT_EQ(run_in(home.path(), {"dashboard", "--no-open"}), kExitOk) << err();
  EXPECT_EQ(out(), "http://127.0.0.1:7878/#token=" + kToken + "\n");
  EXPECT_TRUE(opened.empty());
}

TEST_F(Remote, DashboardOpensTheBrowserWithADisplay) {
  testing::TempDir home;
  home.write("token", kToken);
  process_.io.environ.push_back("WAYLAND_DISPLAY=wayland-0");
  health_script(R"({"listen":"0.0.0.0:7878","allow_submit":true})");
  EXPECT_EQ(run_in(home.path(), {"dashboard", "--json"}), kExitOk) << err();
  Json printed = Json::parse(out());
  EXPECT_EQ(printed["url"], "http://127.0.0.1:7878/#token=" + kToken);  // any address: loopback
  EXPECT_EQ(printed["listen"], "0.0.0.0:7878");
  ASSERT_EQ(opened.size(), 1u);
  EXPECT_EQ(opened[0], printed["url"]);
}

TEST_F(Remote, DashboardWithoutHttpSaysHowToTurnItOn) {
  health_script("null");
  EXPECT_EQ(run({"dashboard", "--no-open"}), kExitFailed);
  EXPECT_NE(err().find("--http 127.0.0.1:7878"), std::string::npos) << err();
  EXPECT_EQ(out(), "");
}

TEST_F(Remote, DashboardWithoutATokenFileSaysSo) {
  testing::TempDir home;
  health_script(R"({"listen":"127.0.0.1:7878","allow_submit":false})");
  EXPECT_EQ(run_in(home.path(), {"dashboard", "--no-open"}), kExitFailed);
  EXPECT_NE(err().find("no token file at " + home.path() + "/token"), std::string::npos) << err();
}

}  // namespace
}  // namespace gpuq::cli
