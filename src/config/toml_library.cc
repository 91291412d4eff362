// SPDX-License-Identifier: Apache-2.0
// toml++'s compiled part (the parser and printers), built into gpuq instead of loaded from
// libtomlplusplus.so (every `gpuq` command pays the dynamic loader for each shared
// library it needs). The other files include <toml++/toml.h> with TOML_HEADER_ONLY=0, as they
// did against the shared library; TOML_IMPLEMENTATION makes this file the one that defines
// toml++'s out-of-line functions.
#define TOML_IMPLEMENTATION 1
#include <toml++/toml.h>
