// SPDX-License-Identifier: Apache-2.0
// The check of a `gpuq daemon --gpus` value, shared by the command line and `gpuq service
// install` (which writes it into the unit): auto, none, fake:N (N from 1 to 1024) or distinct
// device indices "0,2,3". Stateless.
#pragma once

#include <string_view>

#include "base/status.h"

namespace gpuq::cli {

// ok(), or an error that names the value, what is wrong with it and the forms it may take.
Status check_gpu_selection(std::string_view text);

}  // namespace gpuq::cli
