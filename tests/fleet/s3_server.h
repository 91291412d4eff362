// SPDX-License-Identifier: Apache-2.0
// A real S3 API on loopback for the fleet's tests: moto's server (tests/fleet/s3_server.py),
// which checks every request's SigV4 signature against the one access key it made, and serves
// one request at a time so that its conditional writes are atomic as S3's are.
//
//   auto server = testing::S3Server::start();
//   if (!server && server.error().code == Code::kFailedPrecondition)
//     GTEST_SKIP() << server.error().message;           // python3 has no moto here
//   ASSERT_TRUE(server) << server.error().message;
//   auto store = open_store((*server)->url("my-test"), (*server)->options());
//
// Starting takes a second or two (moto's import): share one server across a suite and give
// each test its own prefix. The server is the S3Server's child; the destructor ends it
// (SIGTERM, then SIGKILL) and reaps it, and the script also exits when its stdin (a pipe from
// this process) closes, so a crashed test binary leaves no server behind.
// Thread rules: the accessors, counts and reset_counts are thread-safe; create_bucket is not.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "fleet/object_store.h"

namespace gpuq::fleet::testing {

// What the server served since it started or since reset_counts(), by kind (s3_server.py):
// a ListObjectsV2 is a "list", not a "get"; a GET answered 304 counts in `get` and in
// `not_modified`.
struct RequestCounts {
  struct Request {
    double time_s = 0;   // when it was served, seconds since the epoch
    std::string method;  // GET, PUT, ...
    std::string kind;    // get, put, list, delete, head, other
    std::string key;     // the path after the bucket: the key with the store's prefix
    int status = 0;
    double server_ms = 0;  // the time moto took to answer it (its lock's wait and the transfer left out)
  };
  int64_t get = 0;
  int64_t not_modified = 0;
  int64_t put = 0;
  int64_t list = 0;
  int64_t remove = 0;
  int64_t head = 0;
  int64_t other = 0;
  std::vector<Request> requests;  // the latest 10,000, oldest first
};

class S3Server {
 public:
  // Starts the server on a free port of 127.0.0.1 with `bucket` made, and waits until it
  // answers. kFailedPrecondition when python3 cannot import moto (skip the test then); any
  // other error fails.
  static Result<std::unique_ptr<S3Server>> start(const std::string& bucket = "gpuq-test");
  ~S3Server();
  S3Server(const S3Server&) = delete;
  S3Server& operator=(const S3Server&) = delete;

  int port() const { return port_; }
  std::string endpoint() const;  // "http://127.0.0.1:PORT"
  const std::string& bucket() const { return bucket_; }
  // Options for a store on this server: its endpoint and credentials, region us-east-1, and
  // quick retries (a test that expects a failure gets it in well under a second).
  StoreOptions options() const;
  // "s3://BUCKET/PREFIX" ("s3://BUCKET" for an empty prefix).
  std::string url(const std::string& prefix) const;

  // Makes another bucket, by a signed PUT /NAME.
  Status create_bucket(const std::string& name);

  // The requests served so far (read through a side channel that is not itself counted), and
  // counting from zero again.
  Result<RequestCounts> counts() const;
  Status reset_counts();

 private:
  S3Server() = default;

  pid_t pid_ = -1;
  int stdin_fd_ = -1;  // the script exits when this closes
  int port_ = 0;
  std::string bucket_;
  std::string access_key_id_;
  std::string secret_access_key_;
};

}  // namespace gpuq::fleet::testing
