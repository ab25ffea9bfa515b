#pragma once
// Process-wide CUDA math settings, from the config: applied by train, evaluate and translate
// when they compute on a GPU (settings only, so they compile and are tested without one).
#include "config/config.h"

namespace nmt::runtime {

// train.tf32: fp32 matrix products and convolutions on CUDA may use TF32 tensor cores
// (about 10 mantissa bits per product; PyTorch's default is off for matmuls).
// train.cudnn_sdpa: let scaled_dot_product_attention pick cuDNN's kernel. Off by default:
// with batches of varying shapes, cuDNN SDPA planned a new graph for every shape, and bf16
// training on an H100 ran 12-30x slower than fp32, while PyTorch with cuDNN SDPA off ran
// 10x faster (one H100 measurement, not repeated).
void configure_cuda_math(const config::TrainConfig& cfg);

}  // namespace nmt::runtime
