// SPDX-License-Identifier: Apache-2.0
#include <fmt/format.h>

#include "base/paths.h"
#include "base/token_file.h"
#include "cli/dashboard_page.h"
#include "cli/commands.h"

namespace gpuq::cli {
namespace {

// Where a browser on this machine reaches a listener bound to `listen`: an "any address"
// listener is reached on loopback.
std::string browse_address(std::string listen) {
  if (listen.starts_with("0.0.0.0:")) return "127.0.0.1" + listen.substr(7);
  if (listen.starts_with("[::]:")) return "[::1]" + listen.substr(4);
  return listen;
}

bool has_display(const Io& io) {
  for (const std::string& entry : io.environ) {
    for (std::string_view name : {"DISPLAY=", "WAYLAND_DISPLAY="}) {
      if (entry.starts_with(name) && entry.size() > name.size()) return true;
    }
  }
  return false;
}

}  // namespace

int run_dashboard(Context& ctx, const DashboardOptions& options) {
  if (options.revoke) {
    auto revoked = ctx.client().post("/v1/dashboard/session/revoke", "{}");
    if (!revoked) return ctx.report(revoked.error());
    auto answer = parse_json(revoked->body);
    if (!answer) return ctx.report(answer.error());
    if (options.json) {
      ctx.out() << json_text(*answer) << '\n';
    } else if (answer->value("revoked", false)) {
      ctx.out() << "revoked the dashboard token of " << json_string(*answer, "user")
                << ": its links and cookies no longer work; `gpuq dashboard` makes a new one\n";
    } else {
      ctx.out() << json_string(*answer, "user") << " had no dashboard token\n";
    }
    return kExitOk;
  }
  if (!ctx.remote().base.empty() && ctx.remote_token().empty()) {
    // A link needs a token, and the home's goes only to the listener it was made for.
    std::string why = ctx.remote_token_withheld().empty() ? "no token was given" : ctx.remote_token_withheld();
    return ctx.report(kExitFailed, fmt::format("no link for {}: {}", ctx.remote().base, why));
  }
  auto health = ctx.client().get_json("/v1/health");
  if (!health) return ctx.report(health.error());
  auto http = health->find("http");
  if (http == health->end() || !http->is_object() || json_string(*http, "listen").empty()) {
    return ctx.report(kExitFailed,
                      "the daemon serves no HTTP listener: it was started with --http off, "
                      "[http] listen = \"off\", or its port was in use (see `gpuq events | grep "
                      "daemon.http_failed`). Restart it with --http 127.0.0.1:7878 (or set [http] "
                      "listen in its config.toml)");
  }
  std::string listen = json_string(*http, "listen");
  std::string base = "http://" + browse_address(listen);
  std::string token;
  if (!ctx.remote().base.empty()) {
    base = ctx.remote().base;
    token = ctx.remote_token();
  } else if (health->value("system", false)) {
    // A box's daemon (docs/lab.md): a token of the caller's own, so the pages act with its rights.
    auto session = ctx.client().post("/v1/dashboard/session", "{}");
    if (!session) return ctx.report(session.error());
    auto answer = parse_json(session->body);
    if (!answer) return ctx.report(answer.error());
    token = json_string(*answer, "token");
  } else {
    auto read = read_token_file(HomeLayout{ctx.home()}.token());
    if (!read) return ctx.report(kExitFailed, read.error().message);
    token = std::move(*read);
  }
  std::string url = fmt::format("{}/#token={}", base, token);
  if (options.json) {
    Json out = {{"url", url}, {"listen", listen}};
    ctx.out() << json_text(out) << '\n';
  } else {
    ctx.out() << url << '\n';
  }
  if (!options.no_open && has_display(ctx.io()) && ctx.io().open_url) {
    // The browser is sent a private file that leads on to the link: the token never becomes
    // an argument of a process, which every user of the machine could read in `ps`.
    auto page = write_dashboard_redirect(ctx.io().environ, listen, url);
    if (!page) {
      ctx.err() << "gpuq: " << page.error().message << "; open the link above in a browser\n";
    } else if (!ctx.io().open_url(file_url(*page))) {
      ctx.err() << "gpuq: could not start xdg-open; open the link above in a browser\n";
    }
  }
  return kExitOk;
}

}  // namespace gpuq::cli
