// SPDX-License-Identifier: Apache-2.0
// A static binary that looks a user up: what portable_binary.sh must refuse (a static gpuq-shim
// or light client that did so would need the build machine's NSS modules at run time).
#include <pwd.h>

#include <vector>

int main(int argc, char** argv) {
  passwd entry{};
  passwd* found = nullptr;
  std::vector<char> buffer(4096);
  ::getpwnam_r(argc > 1 ? argv[1] : "root", &entry, buffer.data(), buffer.size(), &found);
  return found == nullptr;
}
