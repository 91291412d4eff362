// SPDX-License-Identifier: Apache-2.0
// A stand-in for libnvidia-ml.so.1, for the NVML probe's tests only (never installed): built as
// a shared library that the probe loads through $GPUQ_NVML_LIBRARY. It exports the NVML functions
// the probe uses, with canned answers:
//   GPU 0: 20480 MiB used (plus half a MiB), utilisation 37%, 64 C, 287.5 W, two compute
//          processes: pid 4242 with 12288 MiB and pid 4343 whose memory NVML cannot tell
//          (NVML_VALUE_NOT_AVAILABLE);
//   GPU 1: 1 MiB used, utilisation, temperature and power NOT_SUPPORTED, no processes.
// Process lists follow NVML's two-step protocol (INSUFFICIENT_SIZE with the count needed).
// Like an R535 driver, nvmlDeviceGetComputeRunningProcesses_v3 writes the longer struct with
// usedGpuCcProtectedMemory, so a probe that reads it as nvmlProcessInfo_v2_t gets garbage.
// Built with GPUQ_FAKE_NVML_V1_ONLY it exports only the plain (v1) process function, as drivers
// before R450 did.
// Tests steer it through the fake_nvml_* functions below, after dlopen'ing the same path (the
// loader then shares one copy of its state with the probe). One thread.
#include <cstring>
#include <vector>

namespace {

using nvmlReturn_t = int;
struct FakeDevice;

constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kUninitialized = 1;
constexpr nvmlReturn_t kInvalidArgument = 2;
constexpr nvmlReturn_t kNotSupported = 3;
constexpr nvmlReturn_t kInsufficientSize = 7;
constexpr unsigned long long kMib = 1024ULL * 1024ULL;
constexpr unsigned long long kNotAvailable = ~0ULL;

struct Process {
  unsigned int pid;
  unsigned long long used;  // bytes
};

struct FakeDevice {
  unsigned long long total;
  unsigned long long used;
  nvmlReturn_t memory_result;
  nvmlReturn_t utilization_result;
  unsigned int utilization;
  std::vector<Process> processes;
  nvmlReturn_t sensors_result = kSuccess;  // temperature and power
  unsigned int temperature = 0;            // degrees C
  unsigned int power = 0;                  // milliwatts
};

struct State {
  nvmlReturn_t init_result = kSuccess;
  int inits = 0;
  int shutdowns = 0;
  int insufficient = 0;   // INSUFFICIENT_SIZE answers given
  unsigned int grow = 0;  // processes that start after each INSUFFICIENT_SIZE answer
  const char* process_function = "";
  FakeDevice devices[2];
};

State& state() {
  static State instance;
  return instance;
}

void canned() {
  State& s = state();
  s = State{};
  s.devices[0] = FakeDevice{81559 * kMib, 20480 * kMib + kMib / 2,
                            kSuccess,     kSuccess,
                            37,           {{4242, 12288 * kMib}, {4343, kNotAvailable}},
                            kSuccess,     64,
                            287500};
  s.devices[1] = FakeDevice{81559 * kMib, 1 * kMib, kSuccess, kNotSupported, 0, {}, kNotSupported};
}

struct Canned {
  Canned() { canned(); }
} canned_at_load;

bool initialised() { return state().inits > state().shutdowns; }

FakeDevice* device_of(void* handle) {
  for (FakeDevice& device : state().devices) {
    if (handle == &device) return &device;
  }
  return nullptr;
}

struct InfoV1 {
  unsigned int pid;
  unsigned long long usedGpuMemory;
};
struct InfoV2 {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
struct InfoR535 {  // what R535's nvmlDeviceGetComputeRunningProcesses_v3 writes
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
  unsigned long long usedGpuCcProtectedMemory;
};

template <class Info>
nvmlReturn_t list_processes(const char* name, void* handle, unsigned int* count, Info* infos) {
  State& s = state();
  s.process_function = name;
  if (!initialised()) return kUninitialized;
  FakeDevice* device = device_of(handle);
  if (device == nullptr || count == nullptr) return kInvalidArgument;
  unsigned int needed = static_cast<unsigned int>(device->processes.size());
  if (*count < needed) {
    *count = needed;
    ++s.insufficient;
    for (unsigned int i = 0; i < s.grow; ++i) {
      device->processes.push_back(
          Process{static_cast<unsigned int>(9000 + device->processes.size()), 1 * kMib});
    }
    return kInsufficientSize;
  }
  if (needed > 0 && infos == nullptr) return kInvalidArgument;
  for (unsigned int i = 0; i < needed; ++i) {
    Info info;
    std::memset(&info, 0xab, sizeof info);  // what the caller should not read stays poisoned
    info.pid = device->processes[i].pid;
    info.usedGpuMemory = device->processes[i].used;
    infos[i] = info;
  }
  *count = needed;
  return kSuccess;
}

}  // namespace

extern "C" {

// --- NVML ---

nvmlReturn_t nvmlInit_v2() {
  State& s = state();
  if (s.init_result != kSuccess) return s.init_result;
  ++s.inits;
  return kSuccess;
}

nvmlReturn_t nvmlShutdown() {
  State& s = state();
  if (!initialised()) return kUninitialized;
  ++s.shutdowns;
  return kSuccess;
}

const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case 0:
      return "Success";
    case 1:
      return "Uninitialized";
    case 2:
      return "Invalid Argument";
    case 3:
      return "Not Supported";
    case 7:
      return "Insufficient Size";
    case 9:
      return "Driver Not Loaded";
    case 15:
      return "GPU is lost";
    default:
      return "Unknown Error";
  }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (!initialised()) return kUninitialized;
  *count = 2;
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (!initialised()) return kUninitialized;
  if (index >= 2 || device == nullptr) return kInvalidArgument;
  *device = &state().devices[index];
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(void* handle, unsigned long long* memory) {
  if (!initialised()) return kUninitialized;
  FakeDevice* device = device_of(handle);
  if (device == nullptr) return kInvalidArgument;
  if (device->memory_result != kSuccess) return device->memory_result;
  memory[0] = device->total;
  memory[1] = device->total - device->used;
  memory[2] = device->used;
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(void* handle, unsigned int* utilization) {
  if (!initialised()) return kUninitialized;
  FakeDevice* device = device_of(handle);
  if (device == nullptr) return kInvalidArgument;
  if (device->utilization_result != kSuccess) return device->utilization_result;
  utilization[0] = device->utilization;
  utilization[1] = device->utilization / 2;
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetTemperature(void* handle, int sensor, unsigned int* degrees) {
  if (!initialised()) return kUninitialized;
  FakeDevice* device = device_of(handle);
  if (device == nullptr || sensor != 0) return kInvalidArgument;
  if (device->sensors_result != kSuccess) return device->sensors_result;
  *degrees = device->temperature;
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(void* handle, unsigned int* milliwatts) {
  if (!initialised()) return kUninitialized;
  FakeDevice* device = device_of(handle);
  if (device == nullptr) return kInvalidArgument;
  if (device->sensors_result != kSuccess) return device->sensors_result;
  *milliwatts = device->power;
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(void* handle, unsigned int* count,
                                                  InfoV1* infos) {
  return list_processes("nvmlDeviceGetComputeRunningProcesses", handle, count, infos);
}

#ifndef GPUQ_FAKE_NVML_V1_ONLY
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(void* handle, unsigned int* count,
                                                     InfoV2* infos) {
  return list_processes("nvmlDeviceGetComputeRunningProcesses_v2", handle, count, infos);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(void* handle, unsigned int* count,
                                                     InfoR535* infos) {
  return list_processes("nvmlDeviceGetComputeRunningProcesses_v3", handle, count, infos);
}
#endif

// --- test controls ---

// Back to the canned answers, counters at zero.
void fake_nvml_reset() { canned(); }

// What nvmlInit_v2 answers (0 = success).
void fake_nvml_set_init_result(int result) { state().init_result = result; }

// What nvmlDeviceGetMemoryInfo answers for `index` (0 = the canned memory).
void fake_nvml_set_memory_result(unsigned int index, int result) {
  state().devices[index].memory_result = result;
}

// Replaces GPU `index`'s processes with `count` processes, pids 5000.., 1..count MiB each.
void fake_nvml_set_processes(unsigned int index, unsigned int count) {
  std::vector<Process>& processes = state().devices[index].processes;
  processes.clear();
  for (unsigned int i = 0; i < count; ++i) processes.push_back(Process{5000 + i, (i + 1) * kMib});
}

// After every INSUFFICIENT_SIZE answer, `count` more processes start on that GPU.
void fake_nvml_set_growth(unsigned int count) { state().grow = count; }

int fake_nvml_inits() { return state().inits; }
int fake_nvml_shutdowns() { return state().shutdowns; }
int fake_nvml_insufficient_answers() { return state().insufficient; }
const char* fake_nvml_process_function() { return state().process_function; }

}  // extern "C"
