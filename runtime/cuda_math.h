#pragma once
// Process-wide CUDA math settings, from the config: applied by train, evaluate and translate
// when they compute on a GPU (settings only, so they compile and are tested without one).
#include <torch/torch.h>

#include "config/config.h"

namespace nmt::runtime {

// train.tf32 (default on): fp32 matrix products and convolutions on CUDA may use TF32 tensor
// cores (about 10 mantissa bits per product, accumulated in fp32), as Marian and Lightning
// advise on Ampere and later; PyTorch's own default is off.
// train.cudnn_sdpa: let scaled_dot_product_attention pick cuDNN's kernel. Off by default:
// with batches of varying shapes, cuDNN SDPA planned a new graph for every shape, and bf16
// training on an H100 ran 12-30x slower than fp32, while PyTorch with cuDNN SDPA off ran
// 10x faster.
// debug.deterministic, for a process on a GPU (`device`): only deterministic CUDA kernels
// (LibTorch refuses an op that has none, naming it), cuBLAS with a fixed workspace, cuDNN
// without autotuning, and attention by the math kernel (flash and memory-efficient backward sum
// with atomics), so that a run and its resume are bitwise equal on a GPU too. Slower: for
// checking, not for training. On a CPU it sets nothing: CPU runs are deterministic already, and
// LibTorch's deterministic mode would fill every new empty tensor with NaN there.
void configure_cuda_math(const config::Config& cfg, const torch::Device& device);

}  // namespace nmt::runtime
