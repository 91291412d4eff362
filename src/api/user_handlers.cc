// SPDX-License-Identifier: Apache-2.0
// The endpoints of a box's users (docs/lab.md): whether a caller may make a request
// (api/permissions.h over the owner read from the store), who the caller is (GET /v1/me), and
// each user's own dashboard token (POST /v1/dashboard/session, .../revoke).
#include <fmt/format.h>
#include <unistd.h>

#include "api/permissions.h"
#include "api/server.h"

namespace gpuq::api {

Status Server::authorize(const Route& where, const Caller& caller) {
  Need need = need_of(where.endpoint);
  if (caller.admin || need == Need::kAnyone) return ok();
  std::string action = action_words(where.endpoint, where.verb);
  if (need == Need::kAdmin) return permit(caller, need, action, "", "");
  if (where.endpoint == Endpoint::kArrayControl) {
    auto array = find_array(where.subject);
    if (!array) return tl::unexpected(array.error());
    return permit(caller, need, action, fmt::format("array '{}'", array->name), array_owner(array->id));
  }
  auto id = resolve(where.subject);
  if (!id) return tl::unexpected(id.error());
  auto job = store_->find_job(*id, false);
  if (!job) return tl::unexpected(job.error());
  if (!*job) return fail(Code::kNotFound, fmt::format("no job {}", *id));  // for anyone: 404
  return permit(caller, need, action, fmt::format("job {}", *id), (*job)->spec.user);
}

Response Server::me(const Caller& caller) {
  return json_response(http::status::ok,
                       {{"user", caller.user.empty() ? login_name(::getuid()) : caller.user},
                        {"admin", caller.admin},
                        {"system", context_.peers.shared}});
}

Response Server::dashboard_session(const std::string& verb, const Caller& caller) {
  if (!context_.sessions) {
    return error_response({Code::kFailedPrecondition,
                           "this daemon serves one user, not a box's users (it runs without --system): "
                           "`gpuq dashboard` reads its token from the daemon's home"});
  }
  if (caller.user.empty()) {
    return error_response({Code::kInvalidArgument,
                           "the daemon's own token is no user's session: ask on the unix socket "
                           "(gpuq dashboard) as the user whose session it is"});
  }
  if (verb == "revoke") {
    auto revoked = context_.sessions->revoke(caller.user);
    if (!revoked) return error_response(revoked.error());
    // The pages signed in with the token end with it.
    if (context_.browser_sessions) {
      auto ended = context_.browser_sessions->end_all_of(caller.user);
      if (!ended) return error_response(ended.error());
    }
    return json_response(http::status::ok, {{"user", caller.user}, {"revoked", *revoked}});
  }
  auto token = context_.sessions->token_for({caller.user, caller.uid});
  if (!token) return error_response(token.error());
  return json_response(http::status::ok, {{"user", caller.user}, {"token", *token}});
}

}  // namespace gpuq::api
