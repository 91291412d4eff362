// TEMPORARY: stands in for the S3 and directory stores until they are merged into this tree, so
// that everything that calls open_store links. Every URL is refused as not built yet.
#include <fmt/format.h>

#include "fleet/object_store.h"

namespace gpuq::fleet {

Result<std::unique_ptr<ObjectStore>> open_store(const std::string& url, const StoreOptions&) {
  return fail(Code::kUnavailable,
              fmt::format("cannot open {}: this build has no object stores yet (not built yet)", url));
}

StoreOptions with_aws_environment(StoreOptions options) { return options; }

}  // namespace gpuq::fleet
