#include "model/kernels/linear.h"

#include <ATen/autocast_mode.h>

#include "model/kernels/gemm.h"

namespace nmt::model::kernels {
namespace {

// Forward y = x W^T (+ b); backward dx = dy W, dW = dy^T x, db = sum over rows of dy: the
// three products through sgemm(), on x and dy flattened to rows.
struct OneDnnLinear : torch::autograd::Function<OneDnnLinear> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias) {
    const bool has_bias = bias.numel() > 0;  // an empty bias stands for none (see linear())
    const auto rows = x.reshape({-1, x.size(-1)}).contiguous();
    // Fresh memory for the product: contiguous() of a one-row expand of the bias is the bias
    // itself (a size-1 dimension's stride does not count), and the GEMM would write into it.
    auto y = torch::empty({rows.size(0), weight.size(0)}, x.options());
    if (has_bias) y.copy_(bias.expand_as(y));
    const auto w = weight.contiguous();
    sgemm(GemmBackend::kOneDnn, rows, false, w, true, y, /*accumulate=*/has_bias);
    ctx->save_for_backward({rows, w});
    ctx->saved_data["has_bias"] = has_bias;
    auto out_shape = x.sizes().vec();
    out_shape.back() = weight.size(0);
    return y.view(out_shape);
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& rows = saved[0];
    const auto& w = saved[1];
    const auto dy = grads[0].reshape({-1, w.size(0)}).contiguous();
    torch::Tensor dx, dw, db;
    if (ctx->needs_input_grad(0)) {
      dx = torch::empty_like(rows);
      sgemm(GemmBackend::kOneDnn, dy, false, w, false, dx, false);
      auto in_shape = grads[0].sizes().vec();
      in_shape.back() = w.size(1);
      dx = dx.view(in_shape);
    }
    if (ctx->needs_input_grad(1)) {
      dw = torch::empty_like(w);
      sgemm(GemmBackend::kOneDnn, dy, true, rows, false, dw, false);
    }
    if (ctx->saved_data["has_bias"].toBool() && ctx->needs_input_grad(2)) db = dy.sum(0);
    return {dx, dw, db};
  }
};

bool onednn_applies(const torch::Tensor& x, const torch::Tensor& weight) {
  return gemm_backend() == GemmBackend::kOneDnn && x.device().is_cpu() && x.scalar_type() == torch::kFloat32 &&
         weight.scalar_type() == torch::kFloat32 && x.numel() > 0 && !at::autocast::is_autocast_enabled(at::kCPU);
}

}  // namespace

torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  if (!onednn_applies(x, weight)) return torch::nn::functional::linear(x, weight, bias);
  // Autograd functions take no undefined tensors: no bias goes in as an empty one.
  return OneDnnLinear::apply(x, weight, bias.defined() ? bias : torch::empty({0}, weight.options()));
}

}  // namespace nmt::model::kernels
