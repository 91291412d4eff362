// SPDX-License-Identifier: Apache-2.0
// Tables of functions looked up in a library opened with dlopen: libcurl (libcurl.h) and
// libcrypto (libcrypto.h) are loaded this way at first use, so that the commands that never
// need them do not pay for loading them. Pure helpers; thread-safe.
#pragma once

#include <dlfcn.h>

#include <string>

namespace gpuq {

// Looks `name` up in `library` into `slot` (typed as the function's header declares it); when
// it is absent, `missing` names the first name not found.
template <typename Fn>
void resolve_symbol(void* library, const char* name, Fn& slot, std::string& missing) {
  slot = reinterpret_cast<Fn>(::dlsym(library, name));
  if (slot == nullptr && missing.empty()) missing = name;
}

}  // namespace gpuq
