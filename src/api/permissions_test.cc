// SPDX-License-Identifier: Apache-2.0
// Who may do what (api/permissions.h), and the users' dashboard sessions (api/user_sessions.h)
// with the TCP policy that accepts their tokens: pure functions and a file in a temporary
// directory.
#include "api/permissions.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "api/browser_sessions.h"
#include "api/http_policy.h"
#include "api/user_sessions.h"

namespace gpuq::api {
namespace {

const Caller kAlice{"alice", false, 1001};
const Caller kAdmin{"ann", true, 1003};

TEST(Permissions, EveryEndpointAsksWhatItsDocsSay) {
  for (Endpoint e : {Endpoint::kStatus, Endpoint::kShow, Endpoint::kGpus, Endpoint::kEvents,
                     Endpoint::kSubmit, Endpoint::kPlan, Endpoint::kReport, Endpoint::kArray,
                     Endpoint::kDashboardSession}) {
    EXPECT_EQ(need_of(e), Need::kAnyone);
  }
  for (Endpoint e : {Endpoint::kCancel, Endpoint::kControl, Endpoint::kArrayControl, Endpoint::kLog}) {
    EXPECT_EQ(need_of(e), Need::kOwner);
  }
  for (Endpoint e : {Endpoint::kGc, Endpoint::kDrain, Endpoint::kReleaseGpu, Endpoint::kHooks}) {
    EXPECT_EQ(need_of(e), Need::kAdmin);
  }
}

TEST(Permissions, AUserActsOnTheirOwnJobsOnly) {
  EXPECT_TRUE(permit(kAlice, Need::kOwner, "cancel", "job 7", "alice"));
  auto refused = permit(kAlice, Need::kOwner, "cancel", "job 8", "bob");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kPermissionDenied);
  EXPECT_EQ(refused.error().message, "job 8 belongs to 'bob': only 'bob' or an admin may cancel it");
  auto log = permit(kAlice, Need::kOwner, action_words(Endpoint::kLog, ""), "job 8", "bob");
  ASSERT_FALSE(log);
  EXPECT_EQ(log.error().message, "job 8 belongs to 'bob': only 'bob' or an admin may read the log of it");
}

TEST(Permissions, AJobOfNoUserIsTheAdminsAlone) {
  auto refused = permit(kAlice, Need::kOwner, "hold", "job 3", "");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message,
            "job 3 belongs to no user (it was queued before users were recorded): only an admin "
            "may hold it");
  EXPECT_TRUE(permit(kAdmin, Need::kOwner, "hold", "job 3", ""));
}

TEST(Permissions, OnlyAdminsActOnTheDaemon) {
  auto refused = permit(kAlice, Need::kAdmin, action_words(Endpoint::kDrain, "drain"), "", "");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kPermissionDenied);
  EXPECT_NE(refused.error().message.find("only an admin may drain; alice is not one"), std::string::npos);
  EXPECT_TRUE(permit(kAdmin, Need::kAdmin, "drain", "", ""));
  EXPECT_TRUE(permit(kAdmin, Need::kOwner, "cancel", "job 8", "bob"));
  EXPECT_TRUE(permit(kAlice, Need::kAnyone, "", "", ""));
}

TEST(Permissions, OnlyAdminsChooseWhoAContainerRunsAs) {
  JobSpec spec;
  spec.image = "busybox";
  EXPECT_TRUE(may_submit(kAlice, spec));
  spec.container_user = "0";
  auto refused = may_submit(kAlice, spec);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kPermissionDenied);
  EXPECT_NE(refused.error().message.find("--container-user 0"), std::string::npos);
  EXPECT_TRUE(may_submit(kAdmin, spec));
}

class UserSessionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("gpuq-sessions-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "sessions").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(UserSessionsTest, EachUserHasOneTokenKeptAcrossRestartsUntilRevoked) {
  std::string alice, bob;
  {
    UserSessions sessions(path_);
    alice = sessions.token_for({"alice", 1001}).value();
    bob = sessions.token_for({"bob", 1002}).value();
    EXPECT_NE(alice, bob);
    EXPECT_EQ(sessions.token_for({"alice", 1001}).value(), alice);
  }
  UserSessions again(path_);  // a restarted daemon
  auto found = again.find(alice);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->user, "alice");
  EXPECT_EQ(found->uid, 1001u);
  EXPECT_EQ(again.revoke("alice").value(), true);
  EXPECT_FALSE(again.find(alice));
  EXPECT_EQ(again.revoke("alice").value(), false);
  EXPECT_TRUE(again.find(bob));
  EXPECT_FALSE(UserSessions(path_).find(alice));  // the revocation was saved
  EXPECT_NE(again.token_for({"alice", 1001}).value(), alice);
}

TEST_F(UserSessionsTest, ALoginGivenToAnotherUidGetsANewToken) {
  UserSessions sessions(path_);
  std::string old = sessions.token_for({"carol", 1005}).value();
  std::string fresh = sessions.token_for({"carol", 1006}).value();
  EXPECT_NE(old, fresh);
  EXPECT_FALSE(sessions.find(old));
}

TEST_F(UserSessionsTest, UnreadableLinesAreDropped) {
  std::ofstream(path_) << "not json\n{\"user\":\"x\",\"uid\":1,\"token\":\"short\"}\n";
  UserSessions sessions(path_);
  EXPECT_FALSE(sessions.find("short"));
}

TEST_F(UserSessionsTest, TheTcpPolicyTellsWhoseTokenARequestShows) {
  const std::string daemon_token(64, 'a');
  TcpPolicy policy = TcpPolicy::make(daemon_token, ListenAddress{"127.0.0.1", 7878, false}, {}, false);
  policy.sessions = std::make_shared<UserSessions>(path_);
  std::string alice = policy.sessions->token_for({"alice", 1001}).value();

  Request mine{http::verb::get, "/v1/status", 11};
  mine.set(http::field::host, "127.0.0.1:7878");
  mine.set(http::field::authorization, "Bearer " + alice);
  auto who = tcp_identity(policy, mine);
  ASSERT_TRUE(who);
  EXPECT_EQ(who->user, "alice");
  EXPECT_EQ(who->uid, 1001u);
  EXPECT_FALSE(judge_tcp_request(policy, mine));  // let through to the API

  Request daemons = mine;
  daemons.set(http::field::authorization, "Bearer " + daemon_token);
  ASSERT_TRUE(tcp_identity(policy, daemons));
  EXPECT_EQ(tcp_identity(policy, daemons)->user, "");

  policy.sessions->revoke("alice").value();
  EXPECT_FALSE(tcp_identity(policy, mine));
  auto refused = judge_tcp_request(policy, mine);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->result(), http::status::unauthorized);
}

TEST_F(UserSessionsTest, ABoxUsersBrowserSessionActsAsThemAndEndsWithTheirToken) {
  TcpPolicy policy = TcpPolicy::make(std::string(64, 'a'), ListenAddress{"127.0.0.1", 7878, false}, {}, false);
  policy.sessions = std::make_shared<UserSessions>(path_);
  policy.browser_sessions = std::make_shared<BrowserSessions>((dir_ / "browser-sessions").string(), wall_now_ms());
  policy.cookie_name = "gpuq_session_7878";
  std::string bob = policy.sessions->token_for({"bob", 1002}).value();
  Request start{http::verb::post, "/v1/session", 11};
  start.set(http::field::host, "127.0.0.1:7878");
  start.set(http::field::authorization, "Bearer " + bob);
  start.set(http::field::origin, "http://127.0.0.1:7878");
  start.set("X-Gpuq-Csrf", "1");
  auto answer = judge_tcp_request(policy, start);
  ASSERT_TRUE(answer);
  std::string cookie((*answer)[http::field::set_cookie]);
  EXPECT_EQ(cookie.find(bob), std::string::npos) << "the cookie carries the token";
  ASSERT_TRUE(cookie.starts_with("gpuq_session_7878="));
  Request read{http::verb::get, "/v1/status", 11};
  read.set(http::field::host, "127.0.0.1:7878");
  read.set(http::field::cookie, cookie.substr(0, cookie.find(';')));
  auto who = tcp_identity(policy, read);
  ASSERT_TRUE(who);
  EXPECT_EQ(who->user, "bob");
  EXPECT_EQ(who->uid, 1002u);
  // `gpuq dashboard --revoke` ends the token and the pages signed in with it.
  EXPECT_EQ(policy.browser_sessions->end_all_of("bob").value(), 1u);
  EXPECT_FALSE(tcp_identity(policy, read));
}

}  // namespace
}  // namespace gpuq::api
