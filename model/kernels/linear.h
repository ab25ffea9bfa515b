#pragma once
// y = x W^T + b with the GEMM backend of this process (gemm.h): the model's projections,
// FFN and output projection. In training under MKL, or anywhere the oneDNN path does not apply
// (CUDA, autocast, dtypes other than float32), it is LibTorch's own linear layer (at::linear
// on a GPU, torch::nn::functional::linear on a CPU), so the default training path computes
// exactly what LibTorch does. With no gradient recorded, a
// weight on the inference plan (gemm_plan.h, set only by translate and evaluate) is multiplied
// on its kept transposed copy under either library.
//
// Under bf16 products (set_linear_precision, train.precision=bf16 on a CPU) a float32 CPU
// linear layer that records a gradient multiplies bf16 copies of its input, weight and
// output gradient with fp32 sums and fp32 results (bf16_gemm.h): the forward and both
// backward products. Everything around them (bias, ReLU, the saved output, the gradients
// handed on) stays float32; the saved input is its bf16 copy, half the memory. The output
// gradient's bf16 copy is rounded in the pass that masks it by the ReLU or sums the bias
// gradient (bf16_round.h), not in a cast after it.
#include <torch/torch.h>

namespace nmt::model::kernels {

enum class LinearPrecision { kFp32, kBf16 };
// The precision of training's products in this process (kFp32 until set). Throws
// std::runtime_error for kBf16 where bf16_gemm_problem() is not empty.
void set_linear_precision(LinearPrecision precision);
LinearPrecision linear_precision();
// The precision of products with no gradient recorded (decoding: translate and evaluate under
// train.precision=bf16 on a CPU; kFp32 until set, and training never sets it, so validation
// stays float32): under kBf16 bf16(x) times a kept bf16 copy of the weight, fp32 sums and
// result. Throws std::runtime_error for kBf16 where bf16_gemm_problem() is not empty.
void set_inference_precision(LinearPrecision precision);
LinearPrecision inference_precision();

// x [..., in], weight [out, in], bias [out] or undefined.
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

// relu(linear(x, weight, bias)), the FFN's first layer: under oneDNN the bias and ReLU are one
// pass after the GEMM and the backward masks the gradient and sums the bias gradient in one.
torch::Tensor linear_relu(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

// linear(linear_relu(x, w1, b1), w2, b2): the FFN with nothing between its layers. Under bf16
// products in training it is one function that computes the same values but keeps the hidden
// layer only as its bf16 copy (fc2's operand; fc1's backward masks by it) instead of also in
// fp32; the mask differs from the fp32 one only for hidden values below 2^-133. In decoding's
// bf16 products fc1's epilogue hands fc2 the bf16 hidden layer (the same bits as the two layers
// apart, one pass fewer).
torch::Tensor feed_forward(const torch::Tensor& x, const torch::Tensor& w1, const torch::Tensor& b1,
                           const torch::Tensor& w2, const torch::Tensor& b2);

}  // namespace nmt::model::kernels
