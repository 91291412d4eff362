// SPDX-License-Identifier: Apache-2.0
// `gpuq fleet push FILE PATH` and `gpuq fleet pull PATH FILE` (docs/fleet.md, "Commands"): a
// file to or from the fleet's data store, where `# gpuq-in:` inputs come from and `# gpuq-out:`
// outputs go, streamed as the nodes stream them (multipart, checked, renamed into place).
#include <fmt/format.h>

#include <chrono>

#include "cli/fleet_commands.h"
#include "cli/format.h"
#include "fleet/job_data.h"

namespace gpuq::cli {
namespace {

int print_moved(Context& ctx, const fleet::ObjectStore& data, const fleet::ObjectInfo& info,
                const std::string& path, const std::string& file, bool pushed, double seconds, bool json) {
  if (json) {
    return print_json(ctx, Json{{"path", path},
                                {"key", info.key},
                                {"store", data.describe()},
                                {"file", file},
                                {"size", info.size},
                                {"etag", info.etag},
                                {"seconds", seconds}});
  }
  const double rate = seconds > 0 ? static_cast<double>(info.size) / seconds : 0;
  ctx.out() << fmt::format("{} {} {} {}/{}: {} in {:.1f} s ({}/s)\n", pushed ? "pushed" : "pulled", pushed ? file : path,
                           pushed ? "to" : "from", data.describe(), info.key, format_bytes(info.size), seconds,
                           format_bytes(static_cast<int64_t>(rate)));
  if (!pushed) ctx.out() << fmt::format("into {}\n", file);
  return kExitOk;
}

}  // namespace

int run_fleet_move_data(Context& ctx, fleet::ObjectStore& data, const std::string& data_prefix,
                        const FleetDataOptions& options, bool push, bool json) {
  if (auto valid = fleet::check_data_path(options.path, data_prefix); !valid) {
    return ctx.report(kExitUsage, valid.error().message);
  }
  const auto started = std::chrono::steady_clock::now();
  auto moved = push ? data.put_file(data_prefix + options.path, options.file)
                    : data.get_file(data_prefix + options.path, options.file);
  if (!moved) return report_fleet_error(ctx, moved.error());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return print_moved(ctx, data, *moved, options.path, options.file, push, seconds, json);
}

}  // namespace gpuq::cli
