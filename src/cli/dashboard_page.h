// SPDX-License-Identifier: Apache-2.0
// The page `gpuq dashboard` opens in the browser (docs/dashboard.md, "Opening it"): a private
// file (mode 0600, in a 0700 directory of the user's own) that sends the browser on to the
// dashboard's link, so the link and its token are never an argument of xdg-open or of the
// browser, where `ps` would show them to every user of the machine. The directory is
// $XDG_RUNTIME_DIR/gpuq (a per-login tmpfs), else $HOME/.cache/gpuq; the file is named after
// the listener's port and rewritten at each call. Plain functions over the file system.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace gpuq::cli {

// The HTML that sends a browser on to `url` (escaped for an attribute and for text).
std::string dashboard_redirect_html(std::string_view url);

// The file: URL of `path`, each byte other than letters, digits, '/', '-', '.', '_' and '~'
// percent-encoded ("/home/a b#1/x.html" -> "file:///home/a%20b%231/x.html").
std::string file_url(std::string_view path);

// Writes the page for `url`, made for the listener at `listen` ("127.0.0.1:7878"), into the
// directory the environment `environ` ("KEY=VALUE" entries) names; its path. An error names
// the path and why (no $XDG_RUNTIME_DIR nor $HOME, a directory others may write, a write that
// failed).
Result<std::string> write_dashboard_redirect(const std::vector<std::string>& environ, std::string_view listen,
                                             std::string_view url);

}  // namespace gpuq::cli
