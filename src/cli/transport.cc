#include "cli/transport.h"

#include <cctype>

namespace gpuq::cli {

std::string HttpResponse::header(std::string_view name) const {
  std::string key(name);
  for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto it = headers.find(key);
  return it == headers.end() ? std::string() : it->second;
}

}  // namespace gpuq::cli
