#pragma once
// Sizes that cannot fit are refused before anything is allocated: LibTorch's allocator
// would otherwise fail deep inside model construction or the first update, with a
// backtrace instead of a message. The estimate is a lower bound (parameters, gradients
// and Adam's moments in fp32, the largest activations and logits of one micro-batch),
// so a refusal is certain, and a pass is no promise.
#include <torch/torch.h>

#include <cstdint>

#include "config/config.h"
#include "model/model_config.h"

namespace nmt::runtime {

struct MemoryEstimate {
  double parameters = 0;   // bytes of parameters (+ gradients and Adam state when training)
  double activations = 0;  // bytes of one micro-batch's activations and logits
  double total() const { return parameters + activations; }
};

// `tokens`: the padded tokens of one (micro-)batch: data.max_tokens for training,
// eval.max_tokens for decoding.
MemoryEstimate estimate_memory(const model::ModelConfig& model, int64_t tokens, bool training);

// What this process can use on `device`, and what limits it: for the CPU the least of
// physical memory, the headroom under the address-space limit (`ulimit -v`, counted from
// the process's current size) and the headroom under its cgroup's memory.max (SLURM,
// containers); for CUDA the device's memory.
struct AvailableMemory {
  double bytes = 0;
  std::string limited_by;  // "of memory", "left under the address-space limit (ulimit -v)", ...
};
AvailableMemory available_memory(const torch::Device& device);

// Throws ConfigError naming the keys, the estimate and what is available when the
// estimate exceeds it.
void check_fits(const model::ModelConfig& model, const config::Config& cfg, const torch::Device& device, bool training);

}  // namespace nmt::runtime
