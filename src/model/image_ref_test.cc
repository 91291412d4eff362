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

}  // namespace
}  // namespace gpuq
