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

namespace nmt::checkpoint {

struct MemoryEstimate {
  double parameters = 0;   // bytes of parameters (+ gradients and Adam state when training)
  double activations = 0;  // bytes of one micro-batch's activations and logits
  double total() const { return parameters + activations; }
};

// `tokens`: the padded tokens of one (micro-)batch: data.max_tokens for training,
// eval.max_tokens for decoding.
MemoryEstimate estimate_memory(const model::ModelConfig& model, int64_t tokens, bool training);

// Bytes this process can use on `device`: physical memory for the CPU, the device's
// memory for CUDA.
double available_memory(const torch::Device& device);

// Throws ConfigError naming the keys, the estimate and what is available when the
// estimate exceeds it.
void check_fits(const model::ModelConfig& model, const config::Config& cfg, const torch::Device& device, bool training);

}  // namespace nmt::checkpoint
