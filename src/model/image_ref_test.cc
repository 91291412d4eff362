// SPDX-License-Identifier: Apache-2.0
#include "model/image_ref.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuq {
namespace {

TEST(ImageReference, AcceptsWhatRuntimesPull) {
  const std::string digest = "sha256:" + std::string(64, 'a');
  for (const std::string& ref : {
           std::string("busybox"),
           std::string("busybox:latest"),
           std::string("library/ubuntu:24.04"),
           std::string("nvcr.io/nvidia/pytorch:24.01-py3"),
           std::string("ghcr.io/org/team/app_v2:v1.2.3"),
           std::string("localhost/app"),
           std::string("localhost:5000/app:dev"),
           std::string("registry.example.com:443/a/b/c"),
           std::string("[::1]:5000/app"),
           std::string("my-registry.local/x"),
           std::string("a__b/c.d/e--f"),
           std::string("app:_under"),
           std::string("app:V1.0-RC"),
           std::string("busybox@") + digest,
           std::string("busybox:1.36@") + digest,
           std::string("Registry.Example.com/app"),  // a host may have capitals
           std::string("x:") + std::string(128, 't'),
       }) {
    auto st = check_image_reference(ref);
    EXPECT_TRUE(st) << ref << " -> " << st.error().message;
  }
}

TEST(ImageReference, RefusesMalformedReferencesSayingWhy) {
  struct Case {
    std::string ref;
    const char* says;
  };
  for (const Case& c : {
           Case{"", "it is empty"},
           Case{"busy box", "space"},
           Case{"busybox\t", "space"},
           Case{"Busybox", "capital letters; image paths are lowercase ('busybox')"},
           Case{"library/Ubuntu:24.04", "('ubuntu')"},
           Case{"nvcr.io/NVIDIA/pytorch", "('nvidia')"},
           Case{"a//b", "empty path component"},
           Case{"app/", "empty path component"},
           Case{"/app", "empty path component"},
           Case{"-app", "begin and end with a letter or digit"},
           Case{"app_", "begin and end"},
           Case{"a___b", "'___' in the path 'a___b' is not a separator"},
           Case{"a._b", "not a separator"},
           Case{"a+b", "not a separator"},
           Case{"app:", "the tag '' is not a tag"},
           Case{"app:.x", "is not a tag"},
           Case{"app:-x", "is not a tag"},
           Case{"app:a/b", "port 'a' is not a number"},  // a ':' before a '/' is a port
           Case{"app:" + std::string(129, 't'), "is not a tag"},
           Case{"app:x+y", "is not a tag"},
           Case{"app@sha256:abc", "lowercase hex digits"},
           Case{"app@sha256:" + std::string(64, 'A'), "lowercase hex digits"},
           Case{"app@md5:" + std::string(64, 'a'), "is not sha256:"},
           Case{"app@", "the digest '' is not"},
           Case{"localhost:/app", "port '' is not a number"},
           Case{"localhost:50x/app", "port '50x' is not a number"},
           Case{"reg-.io/app", "registry 'reg-.io' is not a host name"},
           Case{"reg..io/app", "is not a host name"},
           Case{"[zz]/app", "not an IPv6 address"},
           Case{std::string(256, 'a'), "more than 255"},
       }) {
    auto st = check_image_reference(c.ref);
    ASSERT_FALSE(st) << c.ref;
    EXPECT_NE(st.error().message.find(c.says), std::string::npos)
        << c.ref << " -> " << st.error().message;
    EXPECT_NE(st.error().message.find("[HOST[:PORT]/]PATH[:TAG]"), std::string::npos)
        << "the message shows the form: " << st.error().message;
  }
}

TEST(ContainerUser, TakesIdsAndNames) {
  for (const char* user : {"1000", "1000:1000", "0:0", "alice", "alice:staff", "_svc:users-1"}) {
    EXPECT_TRUE(check_container_user(user)) << user;
  }
  for (const char* user : {"", ":", "1000:", ":1000", "a b", "a:b:c", "-x", "alice;rm"}) {
    auto st = check_container_user(user);
    ASSERT_FALSE(st) << user;
    EXPECT_NE(st.error().message.find("UID:GID"), std::string::npos) << st.error().message;
  }
}

TEST(ContainerUser, NumbersOutsideTheKernelsIdsAreRefused) {
  EXPECT_TRUE(check_container_user("4294967294:4294967294"));
  for (const char* user : {"4294967295", "0:4294967295", "99999999999", "1000:99999999999"}) {
    auto st = check_container_user(user);
    ASSERT_FALSE(st) << user;
    EXPECT_NE(st.error().message.find("ids below 4294967295"), std::string::npos) << st.error().message;
  }
}

TEST(ContainerUser, IdsAreNumbersOnly) {
  EXPECT_EQ(container_user_ids("4321:4322"), (std::pair<uint32_t, uint32_t>{4321, 4322}));
  EXPECT_EQ(container_user_ids("7"), (std::pair<uint32_t, uint32_t>{7, 7}));
  EXPECT_EQ(container_user_ids("app"), std::nullopt);
  EXPECT_EQ(container_user_ids("7:app"), std::nullopt);
  EXPECT_EQ(container_user_ids("7:"), std::nullopt);
  EXPECT_EQ(container_user_ids(""), std::nullopt);
  EXPECT_EQ(container_user_ids("99999999999"), std::nullopt);
}

// A daemon that is not root cannot chown the run directory to another uid: such a job was
// accepted and then failed every start, retried for ever. It is refused at the submit now.
TEST(ContainerUser, ADaemonNotRunByRootRefusesAnotherUid) {
  auto refused = check_container_user_on("4321:4322", 1000);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("--container-user 4321:4322: this daemon runs as uid 1000, not as "
                                         "root, so it cannot give the run directory to uid 4321"),
            std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("leave --container-user out"), std::string::npos);
  EXPECT_FALSE(check_container_user_on("0", 1000)) << "root inside is another uid for the chown too";
  EXPECT_TRUE(check_container_user_on("0", 0)) << "a root daemon gives the directory to anyone";
  EXPECT_TRUE(check_container_user_on("4321", 0));
  for (const char* own : {"1000", "1000:1000", "1000:27"}) {
    EXPECT_TRUE(check_container_user_on(own, 1000)) << own << ": the daemon's own uid needs no chown";
  }
  EXPECT_TRUE(check_container_user_on("app:app", 1000)) << "a name is the image's: nothing is given to it";
  EXPECT_TRUE(check_container_user_on("", 1000)) << "the submitter's: no container user";
}

}  // namespace
}  // namespace gpuq
