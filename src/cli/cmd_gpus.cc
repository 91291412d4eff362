// SPDX-License-Identifier: Apache-2.0
// `gpuq gpus`: how the daemon found its GPUs (the mode and a note) and each GPU's state.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/format.h"
#include "cli/gpu_state.h"

namespace gpuq::cli {
namespace {

std::string memory_text(const Json& resource) {
  auto total = json_int(resource, "memory_total_mib");
  if (!total || *total <= 0) return "-";
  return fmt::format("{}/{} MiB", json_int(resource, "memory_used_mib").value_or(0), *total);
}

}  // namespace

int run_gpus(Context& ctx, const GpusOptions& options) {
  auto response = ctx.client().get("/v1/gpus");
  if (!response) return ctx.report(response.error());
  if (options.json) return print_body(ctx, response->body);
  auto answer = parse_json(response->body);
  if (!answer) return ctx.report(answer.error());

  std::string note = json_string(*answer, "note");
  ctx.out() << "mode: " << json_string(*answer, "mode", "unknown")
            << (note.empty() ? "" : " (" + note + ")") << '\n';
  // How runs are contained: their own cgroups, or the marker sweep (docs/containment.md).
  if (answer->contains("containment") && (*answer)["containment"].is_object()) {
    const Json& c = (*answer)["containment"];
    std::string root = json_string(c, "root");
    ctx.out() << "containment: " << json_string(c, "kind", "unknown") << (root.empty() ? "" : " at " + root)
              << " (" << json_string(c, "reason") << ")\n";
  }
  const Json& resources = json_array(*answer, "resources");
  if (resources.empty()) {
    ctx.out() << "no GPUs\n";
    return kExitOk;
  }
  Table table({"NAME", "INDEX", "MODEL", "MEMORY", "UTIL", "STATE", "JOB", "NOTE"});
  for (const auto& r : resources) {
    std::string util = r.contains("utilization") && r["utilization"].is_number()
                           ? field_text(r, "utilization") + "%"
                           : "-";
    table.add_row({field_text(r, "name"), field_text(r, "index"), field_text(r, "model"),
                   memory_text(r), util, gpu_state_cell(r), field_text(r, "job"), gpu_state_note(r)});
  }
  ctx.out() << table.render(ctx.color());
  return kExitOk;
}

}  // namespace gpuq::cli
