#pragma once
// Dropout fused with the residual add that follows it, for the CPU.
//
// LibTorch's CPU dropout draws one Mersenne-Twister number per element (bernoulli_), then
// divides and multiplies in two more passes, and keeps the mask for the backward: ~5% of an
// update here. This kernel decides keep/drop from a counter-based hash of (key, element
// index), so the forward is one pass (x + mask * y / (1 - p)) and the backward regenerates
// the mask instead of storing it. Each call draws a fresh 64-bit key from LibTorch's
// default CPU generator, so masks follow train.seed and the generator state a checkpoint
// restores; they do not depend on the thread count.
#include <torch/torch.h>

namespace nmt::model::kernels {

// x + dropout(y, p) when training, x + y otherwise; x undefined means plain dropout(y).
// The fused path needs float32 contiguous CPU tensors of one shape; anything else (CUDA,
// bf16 under autocast, broadcasting) runs LibTorch's dropout and add.
torch::Tensor dropout_add(const torch::Tensor& x, const torch::Tensor& y, double p, bool training);

// The fused kernel's keep decision for element `index` under `key` (exposed for tests).
bool dropout_keeps(uint64_t key, int64_t index, double p);

}  // namespace nmt::model::kernels
