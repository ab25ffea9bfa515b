#include "runtime/device.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#ifdef NMTRAIN_WITH_CUDA
#include <cuda_runtime.h>
#endif

#include <cstdlib>
#include <string>

#include "config/config_error.h"

namespace nmt::runtime {

torch::Device choose_device(const config::TrainConfig& cfg, int local_rank) {
  if (cfg.device == config::Device::kCpu) return torch::kCPU;
  const bool cuda = torch::cuda::is_available();
  if (cfg.device == config::Device::kCuda && !cuda)
    throw config::ConfigError("config key 'train.device' = 'cuda': no CUDA device is available (use auto or cpu)");
  if (!cuda) return torch::kCPU;
  const torch::Device device(torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank % torch::cuda::device_count()));
  // Through c10's device-guard registry, which LibTorch's CUDA library fills in: no CUDA
  // headers are needed here, and LibTorch's own idea of the current device stays in step.
  c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->setDevice(device);
  return device;
}

std::string describe_device(const torch::Device& device) {
#ifdef NMTRAIN_WITH_CUDA
  if (device.is_cuda()) {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, device.index()) == cudaSuccess) return device.str() + " (" + prop.name + ")";
  }
#endif
  return device.str();
}

int launcher_local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "LOCAL_RANK"})
    if (const char* value = std::getenv(name)) {
      char* end = nullptr;
      const long rank = std::strtol(value, &end, 10);
      if (end != value && *end == '\0' && rank >= 0) return static_cast<int>(rank);
    }
  return 0;
}

}  // namespace nmt::runtime
