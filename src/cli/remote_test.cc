// SPDX-License-Identifier: Apache-2.0
// The CLI over TCP, against a scripted daemon: `gpuq --url/--token` (and $GPUQ_URL,
// $GPUQ_TOKEN, the home's token file), the URL's form, and `gpuq dashboard`.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <iterator>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/dashboard_page.h"
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
  void status_script() { script({{"/v1/status?pending_limit=100&held_limit=100&arrays=collapse", json_answer(200, R"({"jobs":[],"resources":[]})")}}); }
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
  home.write("token.listen", "127.0.0.1:1\n");
  status_script();
  EXPECT_EQ(run_in(home.path(), {"--url", "http://127.0.0.1:1", "status"}), kExitOk) << err();
  ASSERT_EQ(tokens.size(), 1u);
  EXPECT_EQ(tokens[0], kToken);
}

// The home's token goes only to the listener it was made for (cli/token_scope.h): another
// server gets none, and the refusal it answers says why.
TEST_F(Remote, TheHomesTokenGoesNowhereElse) {
  testing::TempDir home;
  home.write("token", kToken + "\n");
  home.write("token.listen", "127.0.0.1:7878\n");
  script({{"/v1/status?pending_limit=100&held_limit=100&arrays=collapse",
           json_answer(401, R"({"error":{"code":"unauthenticated","message":"this needs the daemon's token"}})")}});
  EXPECT_EQ(run_in(home.path(), {"--url", "http://evil.example:80", "status"}), kExitFailed);
  ASSERT_EQ(tokens.size(), 1u);
  EXPECT_EQ(tokens[0], "");
  EXPECT_NE(err().find("this needs the daemon's token; no token was sent: the home's token (" + home.path() +
                       "/token) was made for the daemon at 127.0.0.1:7878 and is not sent to "
                       "evil.example:80; pass it with $GPUQ_TOKEN"),
            std::string::npos)
      << err();
}

// A link to another address would have carried the home's token to it.
TEST_F(Remote, DashboardMakesNoLinkForAnotherAddress) {
  testing::TempDir home;
  home.write("token", kToken + "\n");
  home.write("token.listen", "127.0.0.1:7878\n");
  health_script(R"({"listen":"0.0.0.0:80","allow_submit":false})");
  EXPECT_EQ(run_in(home.path(), {"--url", "http://evil.example:80", "dashboard", "--no-open"}), kExitFailed);
  EXPECT_EQ(out(), "");
  EXPECT_TRUE(urls.empty());  // not even asked
  EXPECT_NE(err().find("no link for http://evil.example:80: no token was sent: the home's token (" + home.path() +
                       "/token) was made for the daemon at 127.0.0.1:7878"),
            std::string::npos)
      << err();
}

TEST_F(Remote, WithoutARecordTheHomesTokenGoesNowhere) {
  testing::TempDir home;
  home.write("token", kToken + "\n");
  script({{"/v1/status?pending_limit=100&held_limit=100&arrays=collapse",
           json_answer(401, R"({"error":{"code":"unauthenticated","message":"this needs the daemon's token"}})")}});
  EXPECT_EQ(run_in(home.path(), {"--url", "http://127.0.0.1:7878", "status"}), kExitFailed);
  ASSERT_EQ(tokens.size(), 1u);
  EXPECT_EQ(tokens[0], "");
  EXPECT_NE(err().find(home.path() + "/token.listen"), std::string::npos) << err();
}

TEST_F(Remote, AnUnreachableUrlIsNamed) {
  script({{"/v1/status?pending_limit=100&held_limit=100&arrays=collapse", fail(Code::kUnavailable, "nothing is listening on http://127.0.0.1:1")}});
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
  testing::TempDir runtime;
  process_.io.environ.push_back("XDG_RUNTIME_DIR=" + runtime.path());
  health_script(R"({"listen":"0.0.0.0:7878","allow_submit":true})");
  EXPECT_EQ(run_in(home.path(), {"dashboard", "--json"}), kExitOk) << err();
  Json printed = Json::parse(out());
  EXPECT_EQ(printed["url"], "http://127.0.0.1:7878/#token=" + kToken);  // any address: loopback
  EXPECT_EQ(printed["listen"], "0.0.0.0:7878");
  ASSERT_EQ(opened.size(), 1u);
  // The browser is given a private page that leads on to the link, never the link: an
  // argument of xdg-open is in `ps` for every user.
  EXPECT_EQ(opened[0].find(kToken), std::string::npos) << opened[0];
  std::string page = runtime.path() + "/gpuq/dashboard-7878.html";
  EXPECT_EQ(opened[0], "file://" + page);
  struct stat st {};
  ASSERT_EQ(::stat(page.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((runtime.path() + "/gpuq").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  std::ifstream in(page);
  std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("content=\"0;url=http://127.0.0.1:7878/#token=" + kToken + "\""), std::string::npos) << html;
}

TEST(DashboardPage, AFileUrlEncodesWhatAUrlWouldReadOtherwise) {
  EXPECT_EQ(file_url("/run/user/1000/gpuq/dashboard-7878.html"), "file:///run/user/1000/gpuq/dashboard-7878.html");
  EXPECT_EQ(file_url("/home/a b#1/%x?.html"), "file:///home/a%20b%231/%25x%3F.html");
}

TEST(DashboardPage, TheLinkIsEscapedForHtml) {
  std::string html = dashboard_redirect_html("http://h:1/#token=a\"><script>x</script>&b");
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("http://h:1/#token=a&quot;&gt;&lt;script&gt;x&lt;/script&gt;&amp;b"), std::string::npos);
}

TEST(DashboardPage, ADirectoryOthersMayWriteIsRefused) {
  testing::TempDir runtime;
  ASSERT_EQ(::mkdir((runtime.path() + "/gpuq").c_str(), 0777), 0);
  ASSERT_EQ(::chmod((runtime.path() + "/gpuq").c_str(), 0777), 0);
  auto refused = write_dashboard_redirect({"XDG_RUNTIME_DIR=" + runtime.path()}, "127.0.0.1:7878", "http://x/");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find(runtime.path() + "/gpuq is not a directory of yours that only you may write"),
            std::string::npos) << refused.error().message;
  auto home = write_dashboard_redirect({"HOME=" + runtime.path()}, "[::1]:7878", "http://x/");
  ASSERT_TRUE(home) << home.error().message;
  EXPECT_EQ(*home, runtime.path() + "/.cache/gpuq/dashboard-7878.html");
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
