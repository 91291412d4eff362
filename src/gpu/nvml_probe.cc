// SPDX-License-Identifier: Apache-2.0
#include "gpu/nvml_probe.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace gpuq::gpu {
namespace {

// The slice of nvml.h this probe uses, declared here so that building needs no NVIDIA headers.
// Layouts and values are those of nvml.h (R450 and later).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;

constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr nvmlReturn_t kNvmlErrorNotSupported = 3;
constexpr nvmlReturn_t kNvmlErrorInsufficientSize = 7;
// NVML_VALUE_NOT_AVAILABLE as an unsigned long long: the value cannot be told.
constexpr unsigned long long kNvmlValueNotAvailable = ~0ULL;

struct NvmlMemory {  // nvmlMemory_t (v1), in bytes
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct NvmlUtilization {  // nvmlUtilization_t, percent over the last sample period
  unsigned int gpu;
  unsigned int memory;
};

struct NvmlProcessInfoV1 {  // nvmlProcessInfo_v1_t: nvmlDeviceGetComputeRunningProcesses
  unsigned int pid;
  unsigned long long usedGpuMemory;
};

struct NvmlProcessInfoV2 {  // nvmlProcessInfo_v2_t: ..._v2 (and ..._v3 outside R535)
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

using InitFn = nvmlReturn_t (*)();
using ShutdownFn = nvmlReturn_t (*)();
using CountFn = nvmlReturn_t (*)(unsigned int*);
using HandleFn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using MemoryFn = nvmlReturn_t (*)(nvmlDevice_t, NvmlMemory*);
using UtilizationFn = nvmlReturn_t (*)(nvmlDevice_t, NvmlUtilization*);
// nvmlDeviceGetTemperature(device, NVML_TEMPERATURE_GPU, &degrees C)
using TemperatureFn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned int*);
constexpr int kNvmlTemperatureGpu = 0;
// nvmlDeviceGetPowerUsage(device, &milliwatts)
using PowerFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using ProcessesV1Fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, NvmlProcessInfoV1*);
using ProcessesV2Fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, NvmlProcessInfoV2*);
using ErrorStringFn = const char* (*)(nvmlReturn_t);

struct NvmlApi {
  InitFn init = nullptr;
  ShutdownFn shutdown = nullptr;
  CountFn device_count = nullptr;
  HandleFn device_handle = nullptr;
  MemoryFn memory = nullptr;
  UtilizationFn utilization = nullptr;
  // For the metrics only, so optional: absent, or failing on a GPU, they read as unknown.
  TemperatureFn temperature = nullptr;
  PowerFn power = nullptr;
  // Exactly one of these two is used: processes_v2 when the library has it.
  ProcessesV2Fn processes_v2 = nullptr;
  ProcessesV1Fn processes_v1 = nullptr;
  std::string processes_name;            // the NVML function behind the one in use, for messages
  ErrorStringFn error_string = nullptr;  // absent in very old libraries
};

// Processes may start between the call that sizes the buffer and the one that fills it: the
// buffer gets this much room to spare, and the pair is tried this often before giving up.
constexpr unsigned int kProcessSlack = 8;
constexpr int kProcessAttempts = 5;

constexpr int64_t kBytesPerMib = 1024 * 1024;

int64_t bytes_to_mib(unsigned long long bytes) {
  return static_cast<int64_t>(bytes / static_cast<unsigned long long>(kBytesPerMib));
}

template <class Fn>
Fn lookup(void* library, const char* symbol) {
  return reinterpret_cast<Fn>(::dlsym(library, symbol));
}

// NVML's words for a return code, with the code: "Driver Not Loaded (NVML error 9)".
std::string nvml_error_text(ErrorStringFn error_string, nvmlReturn_t rc) {
  const char* text = error_string != nullptr ? error_string(rc) : nullptr;
  return text != nullptr && *text != '\0' ? fmt::format("{} (NVML error {})", text, rc)
                                          : fmt::format("NVML error {}", rc);
}

std::string dl_error_text() {
  const char* text = ::dlerror();
  return text != nullptr ? text : "unknown dlopen error";
}

class NvmlProbe final : public GpuProbe {
 public:
  NvmlProbe(void* library, NvmlApi api) : library_(library), api_(std::move(api)) {}
  NvmlProbe(const NvmlProbe&) = delete;
  NvmlProbe& operator=(const NvmlProbe&) = delete;
  ~NvmlProbe() override {
    api_.shutdown();
    ::dlclose(library_);
  }

  std::string name() const override { return "nvml"; }

  Result<ProbeSample> sample() override {
    unsigned int count = 0;
    if (nvmlReturn_t rc = api_.device_count(&count); rc != kNvmlSuccess) {
      return failure("nvmlDeviceGetCount_v2", rc);
    }
    ProbeSample sample;
    sample.gpus.reserve(count);
    for (unsigned int index = 0; index < count; ++index) {
      auto gpu = sample_device(index);
      if (!gpu) return tl::unexpected(gpu.error());
      sample.gpus.push_back(std::move(*gpu));
    }
    return sample;
  }

 private:
  std::string error_text(nvmlReturn_t rc) const { return nvml_error_text(api_.error_string, rc); }

  tl::unexpected<Error> failure(std::string_view function, nvmlReturn_t rc) const {
    return fail(Code::kUnavailable, fmt::format("{}: {}", function, error_text(rc)));
  }

  tl::unexpected<Error> failure(std::string_view function, unsigned int index,
                                nvmlReturn_t rc) const {
    return fail(Code::kUnavailable,
                fmt::format("{} for GPU {}: {}", function, index, error_text(rc)));
  }

  Result<GpuSample> sample_device(unsigned int index) const {
    nvmlDevice_t device = nullptr;
    if (nvmlReturn_t rc = api_.device_handle(index, &device); rc != kNvmlSuccess) {
      return failure("nvmlDeviceGetHandleByIndex_v2", index, rc);
    }
    GpuSample gpu;
    gpu.index = static_cast<int>(index);

    NvmlMemory memory{};
    nvmlReturn_t rc = api_.memory(device, &memory);
    if (rc == kNvmlSuccess) {
      gpu.memory_used_mib = bytes_to_mib(memory.used);
    } else if (rc != kNvmlErrorNotSupported) {  // unified-memory boards: nvidia-smi's "[N/A]"
      return failure("nvmlDeviceGetMemoryInfo", index, rc);
    }

    NvmlUtilization utilization{};
    rc = api_.utilization(device, &utilization);
    if (rc == kNvmlSuccess) {
      gpu.utilization = static_cast<int>(std::min(utilization.gpu, 100u));
    } else if (rc != kNvmlErrorNotSupported) {
      return failure("nvmlDeviceGetUtilizationRates", index, rc);
    }

    unsigned int degrees = 0;
    if (api_.temperature != nullptr &&
        api_.temperature(device, kNvmlTemperatureGpu, &degrees) == kNvmlSuccess) {
      gpu.temperature_c = static_cast<int>(std::min(degrees, 1000u));
    }
    unsigned int milliwatts = 0;
    if (api_.power != nullptr && api_.power(device, &milliwatts) == kNvmlSuccess) {
      gpu.power_w = static_cast<double>(milliwatts) / 1000.0;
    }

    auto processes = api_.processes_v2 != nullptr
                         ? read_processes(api_.processes_v2, device, index)
                         : read_processes(api_.processes_v1, device, index);
    if (!processes) return tl::unexpected(processes.error());
    gpu.processes = std::move(*processes);
    return gpu;
  }

  // NVML's two-step list: a call with too small a buffer answers INSUFFICIENT_SIZE and the
  // number needed. The first call passes no buffer, so a GPU without processes costs one call.
  template <class Info>
  Result<std::vector<GpuProcess>> read_processes(nvmlReturn_t (*list)(nvmlDevice_t, unsigned int*,
                                                                      Info*),
                                                 nvmlDevice_t device, unsigned int index) const {
    std::vector<Info> infos;
    for (int attempt = 0; attempt < kProcessAttempts; ++attempt) {
      unsigned int count = static_cast<unsigned int>(infos.size());
      nvmlReturn_t rc = list(device, &count, infos.empty() ? nullptr : infos.data());
      if (rc == kNvmlSuccess) {
        std::vector<GpuProcess> processes;
        count = std::min(count, static_cast<unsigned int>(infos.size()));
        processes.reserve(count);
        for (unsigned int i = 0; i < count; ++i) {
          const Info& info = infos[i];
          int64_t mib =
              info.usedGpuMemory == kNvmlValueNotAvailable ? 0 : bytes_to_mib(info.usedGpuMemory);
          processes.push_back(GpuProcess{static_cast<int>(info.pid), mib});
        }
        return processes;
      }
      if (rc != kNvmlErrorInsufficientSize) return failure(api_.processes_name, index, rc);
      // Grow past what NVML asked for; a library that asks for no more still gets more.
      size_t wanted = std::max<size_t>(count, infos.size() + 1) + kProcessSlack;
      infos.assign(wanted, Info{});
    }
    return fail(Code::kUnavailable,
                fmt::format("{} for GPU {}: the process list kept growing over {} tries",
                            api_.processes_name, index, kProcessAttempts));
  }

  void* library_;
  NvmlApi api_;
};

}  // namespace

std::string nvml_library() {
  const char* configured = std::getenv("GPUQ_NVML_LIBRARY");
  return configured != nullptr && *configured != '\0' ? configured : std::string(kNvmlLibrary);
}

Result<std::unique_ptr<GpuProbe>> open_nvml_probe() {
  std::string path = nvml_library();
  void* library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    return fail(Code::kUnavailable, fmt::format("cannot load {}: {}", path, dl_error_text()));
  }
  auto give_up = [&](std::string why) -> tl::unexpected<Error> {
    ::dlclose(library);
    return fail(Code::kUnavailable, fmt::format("{}: {}", path, why));
  };

  NvmlApi api;
  api.init = lookup<InitFn>(library, "nvmlInit_v2");
  api.shutdown = lookup<ShutdownFn>(library, "nvmlShutdown");
  api.device_count = lookup<CountFn>(library, "nvmlDeviceGetCount_v2");
  api.device_handle = lookup<HandleFn>(library, "nvmlDeviceGetHandleByIndex_v2");
  api.memory = lookup<MemoryFn>(library, "nvmlDeviceGetMemoryInfo");
  api.utilization = lookup<UtilizationFn>(library, "nvmlDeviceGetUtilizationRates");
  api.error_string = lookup<ErrorStringFn>(library, "nvmlErrorString");
  api.temperature = lookup<TemperatureFn>(library, "nvmlDeviceGetTemperature");
  api.power = lookup<PowerFn>(library, "nvmlDeviceGetPowerUsage");
  // _v2 before _v3: both are documented with nvmlProcessInfo_v2_t, but R535 drivers fill _v3's
  // buffer with a longer struct (an extra usedGpuCcProtectedMemory), which misreads every entry
  // after the first and can write past the buffer. _v2 has kept its layout in every driver that
  // has it (R450 and later); _v3 is for a library that has dropped _v2, the plain function for
  // one older than both.
  for (const char* symbol :
       {"nvmlDeviceGetComputeRunningProcesses_v2", "nvmlDeviceGetComputeRunningProcesses_v3"}) {
    if (auto fn = lookup<ProcessesV2Fn>(library, symbol)) {
      api.processes_v2 = fn;
      api.processes_name = symbol;
      break;
    }
  }
  if (api.processes_v2 == nullptr) {
    api.processes_v1 = lookup<ProcessesV1Fn>(library, "nvmlDeviceGetComputeRunningProcesses");
    api.processes_name = "nvmlDeviceGetComputeRunningProcesses";
  }

  const std::pair<const char*, bool> required[] = {
      {"nvmlInit_v2", api.init != nullptr},
      {"nvmlShutdown", api.shutdown != nullptr},
      {"nvmlDeviceGetCount_v2", api.device_count != nullptr},
      {"nvmlDeviceGetHandleByIndex_v2", api.device_handle != nullptr},
      {"nvmlDeviceGetMemoryInfo", api.memory != nullptr},
      {"nvmlDeviceGetUtilizationRates", api.utilization != nullptr},
      {"nvmlDeviceGetComputeRunningProcesses",
       api.processes_v1 != nullptr || api.processes_v2 != nullptr},
  };
  for (const auto& [symbol, present] : required) {
    if (!present) return give_up(fmt::format("not an NVML library: it lacks {}", symbol));
  }

  if (nvmlReturn_t rc = api.init(); rc != kNvmlSuccess) {
    return give_up(fmt::format("nvmlInit_v2 failed: {}", nvml_error_text(api.error_string, rc)));
  }
  return std::unique_ptr<GpuProbe>(std::make_unique<NvmlProbe>(library, std::move(api)));
}

}  // namespace gpuq::gpu
