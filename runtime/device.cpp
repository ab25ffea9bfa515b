#include "runtime/device.h"

#include "config/config_error.h"

namespace nmt::runtime {

torch::Device choose_device(const config::TrainConfig& cfg, int local_rank) {
  if (cfg.device == config::Device::kCpu) return torch::kCPU;
  const bool cuda = torch::cuda::is_available();
  if (cfg.device == config::Device::kCuda && !cuda)
    throw config::ConfigError("config key 'train.device' = 'cuda': no CUDA device is available (use auto or cpu)");
  if (!cuda) return torch::kCPU;
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank % torch::cuda::device_count()));
}

}  // namespace nmt::runtime
