// SPDX-License-Identifier: Apache-2.0
// The NVML probe: samples the GPUs through NVIDIA's management library, libnvidia-ml.so.1, which
// the driver installs. It is loaded at run time with dlopen, so gpuq builds and runs on machines
// without it: the few NVML types and functions used are declared in nvml_probe.cc, not taken from
// nvml.h. Per sample it asks, for every device the library reports: memory in use, utilisation,
// temperature, power draw, and the compute processes with their memory.
// The probe owns the library handle and one nvmlInit_v2; destroying it calls nvmlShutdown and
// dlclose. NVML is thread-safe, but call one probe's sample() from one thread at a time.
// Reads $GPUQ_NVML_LIBRARY (the library to load instead; tests point it at a fake) when opened.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "gpu/probe.h"

namespace gpuq::gpu {

inline constexpr std::string_view kNvmlLibrary = "libnvidia-ml.so.1";

// The library open_nvml_probe loads: $GPUQ_NVML_LIBRARY when set and not empty, else kNvmlLibrary.
std::string nvml_library();

// Loads the library and initialises NVML. Code::kUnavailable, naming the library and saying why
// (dlerror, a missing function, or NVML's own error text), when it cannot: the caller then falls
// back to nvidia-smi.
// The probe's sample() fails with Code::kUnavailable naming the NVML function, the GPU index and
// NVML's error (a GPU fallen off the bus, a permission problem). Utilisation that NVML does not
// support reads as -1, memory it does not support as 0, temperature and power that it cannot
// tell (or a library without their functions) as -1, and a process's memory that NVML cannot
// tell (NVML_VALUE_NOT_AVAILABLE: MIG, WDDM) as 0; processes are never dropped.
Result<std::unique_ptr<GpuProbe>> open_nvml_probe();

}  // namespace gpuq::gpu
