// SPDX-License-Identifier: Apache-2.0
// The one place that includes Boost.Asio for gpuq. Boost 1.74's awaitable.hpp uses
// std::exchange without including <utility>, which GCC 12 in C++20 mode rejects; including
// <utility> first here fixes that for every user. Include this instead of <boost/asio.hpp>.
#pragma once

#include <utility>
#include <boost/asio.hpp>
