#pragma once
// y = x W^T + b with the GEMM backend of this process (gemm.h): the model's projections,
// FFN and output projection. In training under MKL, or anywhere the oneDNN path does not apply
// (CUDA, autocast, dtypes other than float32), it is torch::nn::functional::linear itself, so
// the default training path computes exactly what LibTorch does. With no gradient recorded, a
// weight on the inference plan (gemm_plan.h, set only by translate and evaluate) is multiplied
// on its kept transposed copy under either library.
#include <torch/torch.h>

namespace nmt::model::kernels {

// x [..., in], weight [out, in], bias [out] or undefined.
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

// relu(linear(x, weight, bias)), the FFN's first layer: under oneDNN the bias and ReLU are one
// pass after the GEMM and the backward masks the gradient and sums the bias gradient in one.
torch::Tensor linear_relu(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

}  // namespace nmt::model::kernels
