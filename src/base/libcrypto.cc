// SPDX-License-Identifier: Apache-2.0
#include "base/libcrypto.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include "base/dynamic_library.h"
#include <openssl/evp.h>

namespace gpuq {
namespace {

// The functions of libcrypto that Md5 uses, each typed as openssl/evp.h declares it.
struct CryptoApi {
  decltype(&EVP_MD_CTX_new) ctx_new;
  decltype(&EVP_MD_CTX_free) ctx_free;
  decltype(&EVP_md5) md5;
  decltype(&EVP_DigestInit_ex) init;
  decltype(&EVP_DigestUpdate) update;
  decltype(&EVP_DigestFinal_ex) final;
  decltype(&EVP_EncodeBlock) encode_block;
};

Result<CryptoApi> load_crypto() {
  constexpr const char* kSoname = "libcrypto.so.3";
  auto missing_message = [&](const std::string& why) {
    return fmt::format(
        "libcrypto is needed to check the fleet's transfers (MD5) but {} could not be loaded: "
        "{}. Install it: apt-get install libssl3",
        kSoname, why);
  };
  void* library = ::dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = ::dlerror();
    return fail(Code::kUnavailable, missing_message(why != nullptr ? why : "not found"));
  }
  CryptoApi api{};
  std::string missing;
  resolve_symbol(library, "EVP_MD_CTX_new", api.ctx_new, missing);
  resolve_symbol(library, "EVP_MD_CTX_free", api.ctx_free, missing);
  resolve_symbol(library, "EVP_md5", api.md5, missing);
  resolve_symbol(library, "EVP_DigestInit_ex", api.init, missing);
  resolve_symbol(library, "EVP_DigestUpdate", api.update, missing);
  resolve_symbol(library, "EVP_DigestFinal_ex", api.final, missing);
  resolve_symbol(library, "EVP_EncodeBlock", api.encode_block, missing);
  if (!missing.empty()) {
    ::dlclose(library);
    return fail(Code::kUnavailable, missing_message(fmt::format("it has no {}", missing)));
  }
  return api;
}

Result<const CryptoApi*> crypto_api() {
  static const Result<CryptoApi> loaded = load_crypto();
  if (!loaded) return tl::unexpected(loaded.error());
  return &*loaded;
}

// Only reached after a successful start(), so the table is there.
const CryptoApi& api() { return **crypto_api(); }

}  // namespace

Result<Md5> Md5::start() {
  auto lib = crypto_api();
  if (!lib) return tl::unexpected(lib.error());
  EVP_MD_CTX* context = (*lib)->ctx_new();
  if (context == nullptr || (*lib)->init(context, (*lib)->md5(), nullptr) != 1) {
    if (context != nullptr) (*lib)->ctx_free(context);
    return fail(Code::kInternal, "libcrypto could not start an MD5 digest");
  }
  return Md5(context);
}

Md5::Md5(Md5&& other) noexcept : context_(other.context_) { other.context_ = nullptr; }

Md5::~Md5() {
  if (context_ != nullptr) api().ctx_free(static_cast<EVP_MD_CTX*>(context_));
}

void Md5::update(const void* data, size_t size) {
  api().update(static_cast<EVP_MD_CTX*>(context_), data, size);
}

void Md5::update(std::string_view bytes) { update(bytes.data(), bytes.size()); }

Md5Digest Md5::digest() {
  Md5Digest out{};
  unsigned int size = 0;
  api().final(static_cast<EVP_MD_CTX*>(context_), out.data(), &size);
  return out;
}

Result<Md5Digest> md5_of(std::string_view bytes) {
  auto md5 = Md5::start();
  if (!md5) return tl::unexpected(md5.error());
  md5->update(bytes);
  return md5->digest();
}

std::string to_hex(const Md5Digest& digest) {
  std::string out;
  out.reserve(32);
  for (uint8_t byte : digest) out += fmt::format("{:02x}", byte);
  return out;
}

std::string to_base64(const Md5Digest& digest) {
  unsigned char out[32] = {};  // 4 * ceil(16 / 3) = 24, and a NUL
  const int size = api().encode_block(out, digest.data(), static_cast<int>(digest.size()));
  return std::string(reinterpret_cast<const char*>(out), static_cast<size_t>(size));
}

}  // namespace gpuq
