// SPDX-License-Identifier: Apache-2.0
#include "base/libcurl.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include "base/dynamic_library.h"

namespace gpuq {
namespace {

// Names the package, so that the message says how to fix it on the machine in front of the user.
std::string missing_message(const char* soname, const std::string& why) {
  return fmt::format(
      "libcurl is needed here (webhooks, S3 fleets, gpuq --url) but {} could not "
      "be loaded: {}. Install it: apt-get install libcurl4",
      soname, why);
}

}  // namespace

Result<CurlApi> load_curl(const char* soname) {
  // RTLD_LOCAL: libcurl's symbols serve only this table, never another library's lookups.
  void* library = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = ::dlerror();
    return fail(Code::kUnavailable, missing_message(soname, why != nullptr ? why : "not found"));
  }
  CurlApi api{};
  std::string missing;
  resolve_symbol(library, "curl_easy_init", api.easy_init, missing);
  resolve_symbol(library, "curl_easy_cleanup", api.easy_cleanup, missing);
  resolve_symbol(library, "curl_easy_reset", api.easy_reset, missing);
  resolve_symbol(library, "curl_easy_setopt", api.easy_setopt, missing);
  resolve_symbol(library, "curl_easy_perform", api.easy_perform, missing);
  resolve_symbol(library, "curl_easy_getinfo", api.easy_getinfo, missing);
  resolve_symbol(library, "curl_easy_strerror", api.easy_strerror, missing);
  resolve_symbol(library, "curl_easy_nextheader", api.easy_nextheader, missing);
  resolve_symbol(library, "curl_easy_escape", api.easy_escape, missing);
  resolve_symbol(library, "curl_free", api.free, missing);
  resolve_symbol(library, "curl_slist_append", api.slist_append, missing);
  resolve_symbol(library, "curl_slist_free_all", api.slist_free_all, missing);
  resolve_symbol(library, "curl_getdate", api.getdate, missing);
  decltype(&curl_global_init) global_init = nullptr;
  resolve_symbol(library, "curl_global_init", global_init, missing);
  if (!missing.empty()) {
    ::dlclose(library);
    return fail(
        Code::kUnavailable,
        missing_message(soname,
                        fmt::format("it has no {} (libcurl 7.83 or later is needed)", missing)));
  }
  // Once, before any handle: libcurl's global state (TLS, sockets) is set up here rather than
  // by the first handle, which may be made on any thread.
  if (CURLcode code = global_init(CURL_GLOBAL_DEFAULT); code != CURLE_OK) {
    return fail(Code::kUnavailable,
                missing_message(
                    soname, fmt::format("curl_global_init failed ({})", static_cast<int>(code))));
  }
  return api;
}

Result<const CurlApi*> curl_api() {
  // Function-local statics: C++ makes their one-time initialisation thread-safe.
  static const Result<CurlApi> loaded = load_curl("libcurl.so.4");
  if (!loaded) return tl::unexpected(loaded.error());
  return &*loaded;
}

}  // namespace gpuq
