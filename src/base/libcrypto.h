// SPDX-License-Identifier: Apache-2.0
// MD5 digests from OpenSSL's libcrypto, loaded with dlopen("libcrypto.so.3") at first use, the
// way libcurl is (base/libcurl.h): the fleet's transfers check every part and object they move
// against its MD5 (S3's Content-MD5 and ETags), and libcrypto is on every machine that has
// libcurl4 (it depends on libssl3), so using it costs no package and no start-up time for the
// commands that never move data. Callers see only the Md5 class below.
// Thread-safe: the first use loads the library once; an Md5 is used by one thread at a time.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace gpuq {

using Md5Digest = std::array<uint8_t, 16>;

// An incremental MD5: update() with the bytes in order, then digest() once.
class Md5 {
 public:
  // kUnavailable naming libcrypto.so.3 and its package when it cannot be loaded.
  static Result<Md5> start();
  Md5(Md5&& other) noexcept;
  Md5& operator=(Md5&&) = delete;
  ~Md5();

  void update(std::string_view bytes);
  void update(const void* data, size_t size);
  Md5Digest digest();

 private:
  explicit Md5(void* context) : context_(context) {}
  void* context_;  // EVP_MD_CTX*
};

// The digest of `bytes` at once (kUnavailable as Md5::start).
Result<Md5Digest> md5_of(std::string_view bytes);
// 32 lowercase hex digits, as S3 writes an ETag.
std::string to_hex(const Md5Digest& digest);
// Base64, as S3's Content-MD5 header wants it.
std::string to_base64(const Md5Digest& digest);

}  // namespace gpuq
