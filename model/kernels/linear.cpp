#include "model/kernels/linear.h"

#include <ATen/record_function.h>
#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>

#include "model/kernels/bf16_gemm.h"
#include "model/kernels/bf16_round.h"
#include "model/kernels/cpu_clones.h"
#include "model/kernels/gemm.h"
#include "model/kernels/gemm_plan.h"

namespace nmt::model::kernels {
namespace {

// Rows per task of the epilogues below. The bias gradient is summed per block of rows and the
// blocks' sums added in order, so it does not depend on the thread count.
constexpr int64_t kRowBlock = 32;

// y = max(y + b, 0) in place over rows [r0, r1) of [*, cols] (b may be null): fc1's bias and
// ReLU in one pass after the GEMM, instead of a bias copy before it and a ReLU pass after.
NMT_CPU_CLONES void bias_relu_rows(float* y, const float* b, int64_t r0, int64_t r1, int64_t cols) {
  for (int64_t r = r0; r < r1; ++r) {
    float* row = y + r * cols;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) {
      const float v = row[c] + (b ? b[c] : 0.0f);
      row[c] = v > 0.0f ? v : 0.0f;
    }
  }
}

// h = bf16(max(y + b, 0)) over rows [r0, r1) of [*, cols] (b may be null): the bf16 FFN's
// bias, ReLU and rounding of its hidden layer in one pass.
NMT_CPU_CLONES void bias_relu_rows_to_bf16(const float* y, const float* b, uint16_t* h, int64_t r0, int64_t r1,
                                           int64_t cols) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* yr = y + r * cols;
    uint16_t* hr = h + r * cols;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) {
      const float v = yr[c] + (b ? b[c] : 0.0f);
      hr[c] = bf16_bits(v > 0.0f ? v : 0.0f);
    }
  }
}

// Whether a ReLU output is positive: its fp32 value, or its bf16 copy's bits (a ReLU output is
// +0 or positive, so any bit set means positive; the bf16 copy is 0 only where the fp32 value
// is below 2^-133).
inline bool positive(float y) { return y > 0.0f; }
inline bool positive(c10::BFloat16 y) { return y.x != 0; }

// A gradient's element as its consumer takes it: fp32, or bf16 bits rounded in the same pass.
inline void store(float* out, float v) { *out = v; }
inline void store(uint16_t* out, float v) { *out = bf16_bits(v); }

// out = g where y > 0, else 0 (y null: out = g) over rows [r0, r1); the fp32 values' column
// sums into `sums` (null: not wanted). Y: float, or c10::BFloat16 for the bf16 FFN's saved hidden
// layer; Out: float, or uint16_t for a bf16 copy (a bf16 layer's backward products' operand).
template <typename Y, typename Out>
NMT_CPU_CLONES void masked_rows(const float* g, const Y* y, Out* out, float* sums, int64_t r0, int64_t r1,
                                int64_t cols) {
  if (sums) std::fill(sums, sums + cols, 0.0f);
  for (int64_t r = r0; r < r1; ++r) {
    const float* gr = g + r * cols;
    Out* o = out + r * cols;
    if (y) {
      const Y* yr = y + r * cols;
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) store(o + c, positive(yr[c]) ? gr[c] : 0.0f);
      if (sums)
#pragma omp simd
        for (int64_t c = 0; c < cols; ++c) sums[c] += positive(yr[c]) ? gr[c] : 0.0f;
    } else {
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) store(o + c, gr[c]);
      if (sums)
#pragma omp simd
        for (int64_t c = 0; c < cols; ++c) sums[c] += gr[c];
    }
  }
}

NMT_CPU_CLONES void add_rows_in_order(const float* partial, int64_t blocks, int64_t cols, float* out) {
  std::fill(out, out + cols, 0.0f);
  for (int64_t k = 0; k < blocks; ++k)
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) out[c] += partial[k * cols + c];
}

template <typename Fn>
void for_row_blocks(int64_t rows, const Fn& fn) {
  at::parallel_for(0, (rows + kRowBlock - 1) / kRowBlock, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) fn(k, k * kRowBlock, std::min(rows, (k + 1) * kRowBlock));
  });
}

// bias + ReLU epilogue shared by both precisions: y = max(y + b, 0) in place.
void bias_relu_in_place(torch::Tensor& y, const torch::Tensor& bias) {
  const bool has_bias = bias.numel() > 0;
  const auto b = has_bias ? bias.contiguous() : bias;
  const float* bp = has_bias ? b.const_data_ptr<float>() : nullptr;
  float* yp = y.data_ptr<float>();
  const int64_t cols = y.size(1);
  for_row_blocks(y.size(0), [&](int64_t, int64_t r0, int64_t r1) { bias_relu_rows(yp, bp, r0, r1, cols); });
}

// y = rows op(w) (+ b), then max(y, 0) when `relu`: [rows, out]. Without the ReLU the GEMM adds
// onto a copy of the bias; with it, bias and ReLU are one pass after the GEMM.
torch::Tensor product_with_bias(GemmBackend backend, const torch::Tensor& rows, const torch::Tensor& w, bool trans_w,
                                const torch::Tensor& bias, bool relu) {
  const bool has_bias = bias.numel() > 0;  // an empty bias stands for none (see linear())
  // Fresh memory for the product: contiguous() of a one-row expand of the bias is the bias
  // itself (a size-1 dimension's stride does not count), and the GEMM would write into it.
  auto y = torch::empty({rows.size(0), trans_w ? w.size(0) : w.size(1)}, rows.options());
  if (has_bias && !relu) y.copy_(bias.expand_as(y));
  sgemm(backend, rows, false, w, trans_w, y, has_bias && !relu);
  if (relu) bias_relu_in_place(y, bias);
  return y;
}

// dy [rows, cols] masked by y > 0 where y is defined (fp32, or the bf16 FFN's saved hidden
// layer), returned as `out_type`: kFloat32, or kBFloat16 rounded in the same pass (what a bf16
// layer's backward products take, so no cast follows). When `want_db`, db: the masked values'
// column sums in fp32, per block of rows and the blocks added in order (no dependence on the
// thread count).
torch::Tensor masked_gradient(const torch::Tensor& dy, const torch::Tensor& y, torch::ScalarType out_type, bool want_db,
                              torch::Tensor& db) {
  auto out = torch::empty_like(dy, dy.options().dtype(out_type));
  const int64_t rows_n = dy.size(0), cols = dy.size(1), blocks = (rows_n + kRowBlock - 1) / kRowBlock;
  torch::Tensor partial;
  if (want_db) partial = torch::empty({blocks, cols}, dy.options());
  const float* gp = dy.const_data_ptr<float>();
  float* pp = want_db ? partial.data_ptr<float>() : nullptr;
  const auto rows_with = [&](auto* out_p) {
    for_row_blocks(rows_n, [&](int64_t k, int64_t r0, int64_t r1) {
      float* sums = pp ? pp + k * cols : nullptr;
      if (!y.defined())
        masked_rows(gp, static_cast<const float*>(nullptr), out_p, sums, r0, r1, cols);
      else if (y.scalar_type() == torch::kBFloat16)
        masked_rows(gp, y.const_data_ptr<c10::BFloat16>(), out_p, sums, r0, r1, cols);
      else
        masked_rows(gp, y.const_data_ptr<float>(), out_p, sums, r0, r1, cols);
    });
  };
  if (out_type == torch::kBFloat16)
    rows_with(reinterpret_cast<uint16_t*>(out.data_ptr<c10::BFloat16>()));
  else
    rows_with(out.data_ptr<float>());
  if (want_db) {
    db = torch::empty({cols}, dy.options());
    add_rows_in_order(pp, blocks, cols, db.data_ptr<float>());
  }
  return out;
}

std::vector<int64_t> output_shape(const torch::Tensor& x, const torch::Tensor& weight) {
  auto shape = x.sizes().vec();
  shape.back() = weight.size(0);
  return shape;
}

// What both layers' forwards save: the rows and the weight their products read, and the
// output when a ReLU's backward needs it for the mask.
void save_operands(torch::autograd::AutogradContext* ctx, const torch::Tensor& rows, const torch::Tensor& w,
                       const torch::Tensor& y, bool relu, bool has_bias) {
  if (relu)
    ctx->save_for_backward({rows, w, y});
  else
    ctx->save_for_backward({rows, w});
  ctx->saved_data["has_bias"] = has_bias;
}

// dx, computed on rows, in the shape of the layer's input (dy's leading dimensions).
torch::Tensor shaped_like_input(const torch::Tensor& dx_rows, const torch::Tensor& dy, int64_t in_features) {
  auto shape = dy.sizes().vec();
  shape.back() = in_features;
  return dx_rows.view(shape);
}

// What both layers' backwards start from: the saved rows and weight (as the forward saved
// them), dy flattened to rows and masked by the saved ReLU output if there is one, as `dy_type`
// (kBFloat16 for the bf16 layer: rounded in the pass that masks it or sums db, not in a cast
// after), and db (defined when the bias has one and wants it).
struct BackwardStart {
  torch::Tensor rows, w, dy, db;
};

BackwardStart start_backward(torch::autograd::AutogradContext* ctx, const torch::autograd::tensor_list& grads,
                             torch::ScalarType dy_type) {
  const auto saved = ctx->get_saved_variables();
  BackwardStart s{saved[0], saved[1], grads[0].reshape({-1, saved[1].size(0)}).contiguous(), {}};
  const bool want_db = ctx->saved_data["has_bias"].toBool() && ctx->needs_input_grad(2);
  if (saved.size() == 3)  // relu: mask by the saved output, summing db on the way
    s.dy = masked_gradient(s.dy, saved[2], dy_type, want_db, s.db);
  else if (dy_type == torch::kBFloat16)  // the bf16 copy and db's sums in one pass
    s.dy = masked_gradient(s.dy, torch::Tensor(), dy_type, want_db, s.db);
  else if (want_db)
    s.db = s.dy.sum(0);
  return s;
}

// Forward y = x W^T (+ b), then max(y, 0) when `relu`; backward dx = dy W, dW = dy^T x,
// db = sum over rows of dy (dy masked by y > 0 first under relu): the three products through
// sgemm(), on x and dy flattened to rows.
struct OneDnnLinear : torch::autograd::Function<OneDnnLinear> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias, bool relu) {
    RECORD_FUNCTION("nmt::OneDnnLinear", std::vector<c10::IValue>());  // named in profiles (train --profile)
    const auto rows = x.reshape({-1, x.size(-1)}).contiguous();
    const auto w = weight.contiguous();
    const auto y = forward_on_transposed_weight(w.size(0), w.size(1))  // gemm_plan.h: measured faster
                       ? product_with_bias(GemmBackend::kOneDnn, rows, w.t().contiguous(), false, bias, relu)
                       : product_with_bias(GemmBackend::kOneDnn, rows, w, true, bias, relu);
    save_operands(ctx, rows, w, y, relu, bias.numel() > 0);
    return y.view(output_shape(x, weight));
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    auto [rows, w, dy, db] = start_backward(ctx, grads, torch::kFloat32);
    torch::Tensor dx, dw;
    if (ctx->needs_input_grad(0)) {
      dx = torch::empty_like(rows);
      sgemm(GemmBackend::kOneDnn, dy, false, w, false, dx, false);
      dx = shaped_like_input(dx, grads[0], w.size(1));
    }
    if (ctx->needs_input_grad(1)) {
      dw = torch::empty_like(w);
      sgemm(GemmBackend::kOneDnn, dy, true, rows, false, dw, false);
    }
    return {dx, dw, db, torch::Tensor()};
  }
};

// y = bf16 rows times bf16 w^T, summed and returned in fp32 (+ b), then max(y, 0) when `relu`:
// [rows, out]; as product_with_bias, for training's and decoding's bf16 products.
torch::Tensor bf16_product_with_bias(const torch::Tensor& rows16, const torch::Tensor& w16, const torch::Tensor& bias,
                                     bool relu) {
  const bool has_bias = bias.numel() > 0;
  auto y = torch::empty({rows16.size(0), w16.size(0)}, rows16.options().dtype(torch::kFloat32));
  if (has_bias && !relu) y.copy_(bias.expand_as(y));
  gemm_bf16(rows16, false, w16, true, y, has_bias && !relu);
  if (relu) bias_relu_in_place(y, bias);
  return y;
}

// A bf16 layer's two backward products from its bf16 output gradient: dx = dy16 w16 and
// dW = dy16^T rows16, each summed and returned in fp32, each only where wanted.
struct Bf16LayerGrads {
  torch::Tensor dx, dw;  // [rows, in], [out, in]; undefined where not wanted
};
Bf16LayerGrads bf16_layer_backward(const torch::Tensor& dy16, const torch::Tensor& rows16, const torch::Tensor& w16,
                                   bool want_dx, bool want_dw) {
  Bf16LayerGrads g;
  const auto fp32 = dy16.options().dtype(torch::kFloat32);
  if (want_dx) {
    g.dx = torch::empty({dy16.size(0), w16.size(1)}, fp32);
    gemm_bf16(dy16, false, w16, false, g.dx, false);
  }
  if (want_dw) {
    g.dw = torch::empty({w16.size(0), w16.size(1)}, fp32);
    gemm_bf16(dy16, true, rows16, false, g.dw, false);
  }
  return g;
}

// The same layer with bf16 products (gemm_bf16): y = bf16(x) bf16(W)^T in fp32 (+ b, ReLU);
// backward dx = bf16(dy) bf16(W), dW = bf16(dy)^T bf16(x), both in fp32. bf16(x) is saved.
struct Bf16Linear : torch::autograd::Function<Bf16Linear> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias, bool relu) {
    RECORD_FUNCTION("nmt::Bf16Linear", std::vector<c10::IValue>());  // named in profiles (train --profile)
    const auto rows = x.reshape({-1, x.size(-1)}).to(torch::kBFloat16).contiguous();
    const auto w = weight.to(torch::kBFloat16).contiguous();
    const auto y = bf16_product_with_bias(rows, w, bias, relu);
    save_operands(ctx, rows, w, y, relu, bias.numel() > 0);
    return y.view(output_shape(x, weight));
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    auto [rows, w, dy16, db] = start_backward(ctx, grads, torch::kBFloat16);
    auto g = bf16_layer_backward(dy16, rows, w, ctx->needs_input_grad(0), ctx->needs_input_grad(1));
    if (g.dx.defined()) g.dx = shaped_like_input(g.dx, grads[0], w.size(1));
    return {g.dx, g.dw, db, torch::Tensor()};
  }
};

// h16 = bf16(max(rows16 w16^T + b, 0)): fc1's bf16 product, then its bias, ReLU and rounding to
// bf16 in one pass over the fp32 product (a temporary), which fc2 and the backward's mask read.
torch::Tensor bf16_relu_hidden(const torch::Tensor& rows16, const torch::Tensor& w16, const torch::Tensor& bias) {
  auto y = torch::empty({rows16.size(0), w16.size(0)}, rows16.options().dtype(torch::kFloat32));
  gemm_bf16(rows16, false, w16, true, y, false);
  auto h16 = torch::empty(y.sizes(), rows16.options());
  const bool has_bias = bias.numel() > 0;
  const auto b = has_bias ? bias.contiguous() : bias;
  const float *yp = y.const_data_ptr<float>(), *bp = has_bias ? b.const_data_ptr<float>() : nullptr;
  auto* hp = reinterpret_cast<uint16_t*>(h16.data_ptr<c10::BFloat16>());
  const int64_t cols = y.size(1);
  for_row_blocks(y.size(0), [&](int64_t, int64_t r0, int64_t r1) { bias_relu_rows_to_bf16(yp, bp, hp, r0, r1, cols); });
  return h16;
}

// The FFN under bf16 products, fc2(relu(fc1(x))) as one function: the products, roundings and
// sums of Bf16Linear's two layers, but the hidden layer is kept once, as the bf16 copy fc2
// multiplies (fc1's backward masks by it), not also in fp32: 6.3 MB a layer less at 1,536 rows x
// 1,024. Saved: bf16(x), bf16(W1), bf16(h), bf16(W2).
struct Bf16FeedForward : torch::autograd::Function<Bf16FeedForward> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& w1,
                               const torch::Tensor& b1, const torch::Tensor& w2, const torch::Tensor& b2) {
    RECORD_FUNCTION("nmt::Bf16FeedForward", std::vector<c10::IValue>());  // named in profiles (train --profile)
    const auto rows = x.reshape({-1, x.size(-1)}).to(torch::kBFloat16).contiguous();
    const auto w1_16 = w1.to(torch::kBFloat16).contiguous(), w2_16 = w2.to(torch::kBFloat16).contiguous();
    const auto h16 = bf16_relu_hidden(rows, w1_16, b1);
    const auto y = bf16_product_with_bias(h16, w2_16, b2, false);
    ctx->save_for_backward({rows, w1_16, h16, w2_16});
    ctx->saved_data["has_b1"] = b1.numel() > 0;
    ctx->saved_data["has_b2"] = b2.numel() > 0;
    return y.view(output_shape(x, w2));
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &rows = saved[0], &w1_16 = saved[1], &h16 = saved[2], &w2_16 = saved[3];
    const auto dy = grads[0].reshape({-1, w2_16.size(0)}).contiguous();
    torch::Tensor db1, db2;
    const auto dy16 = masked_gradient(dy, torch::Tensor(), torch::kBFloat16,
                                      ctx->saved_data["has_b2"].toBool() && ctx->needs_input_grad(4), db2);
    const auto fc2 = bf16_layer_backward(dy16, h16, w2_16, /*want_dx=*/true, ctx->needs_input_grad(3));
    const auto dh16 = masked_gradient(fc2.dx, h16, torch::kBFloat16,
                                      ctx->saved_data["has_b1"].toBool() && ctx->needs_input_grad(2), db1);
    auto fc1 = bf16_layer_backward(dh16, rows, w1_16, ctx->needs_input_grad(0), ctx->needs_input_grad(1));
    if (fc1.dx.defined()) fc1.dx = shaped_like_input(fc1.dx, grads[0], w1_16.size(1));
    return {fc1.dx, fc1.dw, db1, fc2.dw, db2};
  }
};

LinearPrecision current_precision = LinearPrecision::kFp32;
LinearPrecision current_inference_precision = LinearPrecision::kFp32;

bool cpu_float32(const torch::Tensor& x, const torch::Tensor& weight) {
  return x.device().is_cpu() && x.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32 &&
         x.numel() > 0 && !at::autocast::is_autocast_enabled(at::kCPU);
}

// Training's bf16 products: a gradient recorded, a float32 CPU layer, bf16 set.
bool bf16_applies(const torch::Tensor& x, const torch::Tensor& weight) {
  return current_precision == LinearPrecision::kBf16 && torch::autograd::GradMode::is_enabled() &&
         cpu_float32(x, weight);
}

bool onednn_applies(const torch::Tensor& x, const torch::Tensor& weight) {
  return gemm_backend() == GemmBackend::kOneDnn && cpu_float32(x, weight);
}

// No gradient recorded (decoding, validation) and the weight's shape on the inference plan:
// the product on its kept transposed copy (gemm_plan.h), under either library.
bool inference_plan_applies(const torch::Tensor& x, const torch::Tensor& weight) {
  return !torch::autograd::GradMode::is_enabled() && cpu_float32(x, weight) && weight.dim() == 2 &&
         !weight.is_inference() && inference_on_transposed_weight(weight.size(0), weight.size(1));
}

// No gradient recorded and decoding's bf16 set: bf16(x) times the weight's kept bf16 copy.
bool inference_bf16_applies(const torch::Tensor& x, const torch::Tensor& weight) {
  return current_inference_precision == LinearPrecision::kBf16 && !torch::autograd::GradMode::is_enabled() &&
         cpu_float32(x, weight) && weight.dim() == 2 && !weight.is_inference();
}

torch::Tensor inference_bf16_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                                    bool relu) {
  const auto rows = x.reshape({-1, x.size(-1)}).to(torch::kBFloat16).contiguous();
  const auto b = bias.defined() ? bias : torch::empty({0}, weight.options());
  return bf16_product_with_bias(rows, kept_bf16_weight(weight), b, relu).view(output_shape(x, weight));
}

torch::Tensor inference_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                               bool relu) {
  const auto rows = x.reshape({-1, x.size(-1)}).contiguous();
  const auto b = bias.defined() ? bias : torch::empty({0}, weight.options());
  return product_with_bias(gemm_backend(), rows, kept_transposed_weight(weight), false, b, relu)
      .view(output_shape(x, weight));
}

// LibTorch's own linear layer. On a GPU, at::linear: a contiguous input of any rank goes to
// addmm, whose bias rides in cuBLASLt's epilogue (one kernel and one autograd node, not a
// matmul, an add and their backward: an update at the recipe's batch size is bound by the
// host's launches, tools/profile_summary.py). On a CPU the C++ frontend's linear (matmul, then
// add), whose results every CPU figure and test was measured with, bit for bit.
torch::Tensor libtorch_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  if (x.is_cuda()) return at::linear(x, weight, bias.defined() ? std::optional<at::Tensor>(bias) : std::nullopt);
  return torch::nn::functional::linear(x, weight, bias);
}

torch::Tensor empty_if_undefined(const torch::Tensor& bias, const torch::Tensor& weight) {
  return bias.defined() ? bias : torch::empty({0}, weight.options());
}

// Decoding's FFN under bf16 products: fc1's epilogue hands the hidden layer to fc2 as bf16
// (bf16_relu_hidden), the same bits as fc1's fp32 output cast for fc2, one pass fewer.
torch::Tensor inference_bf16_feed_forward(const torch::Tensor& x, const torch::Tensor& w1, const torch::Tensor& b1,
                                          const torch::Tensor& w2, const torch::Tensor& b2) {
  const auto rows = x.reshape({-1, x.size(-1)}).to(torch::kBFloat16).contiguous();
  const auto h16 = bf16_relu_hidden(rows, kept_bf16_weight(w1), empty_if_undefined(b1, w1));
  return bf16_product_with_bias(h16, kept_bf16_weight(w2), empty_if_undefined(b2, w2), false).view(output_shape(x, w2));
}

}  // namespace

void require_available(LinearPrecision precision) {
  if (precision == LinearPrecision::kBf16)
    if (const std::string why = bf16_gemm_problem(); !why.empty())
      throw std::runtime_error("bf16 products are not available: " + why);
}

void set_linear_precision(LinearPrecision precision) {
  require_available(precision);
  current_precision = precision;
}

LinearPrecision linear_precision() { return current_precision; }

void set_inference_precision(LinearPrecision precision) {
  require_available(precision);
  current_inference_precision = precision;
}

LinearPrecision inference_precision() { return current_inference_precision; }

torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  if (inference_bf16_applies(x, weight)) return inference_bf16_linear(x, weight, bias, false);
  if (inference_plan_applies(x, weight)) return inference_linear(x, weight, bias, false);
  if (bf16_applies(x, weight)) return Bf16Linear::apply(x, weight, empty_if_undefined(bias, weight), false);
  if (!onednn_applies(x, weight)) return libtorch_linear(x, weight, bias);
  // Autograd functions take no undefined tensors: no bias goes in as an empty one.
  return OneDnnLinear::apply(x, weight, bias.defined() ? bias : torch::empty({0}, weight.options()), false);
}

torch::Tensor linear_relu(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  if (inference_bf16_applies(x, weight)) return inference_bf16_linear(x, weight, bias, true);
  if (inference_plan_applies(x, weight)) return inference_linear(x, weight, bias, true);
  if (bf16_applies(x, weight)) return Bf16Linear::apply(x, weight, empty_if_undefined(bias, weight), true);
  // LibTorch's path: ReLU in place on the product (addmm keeps its inputs, not its output,
  // for the backward), which computes exactly torch::relu(linear(...)) with one pass less.
  if (!onednn_applies(x, weight)) {
    auto y = libtorch_linear(x, weight, bias);
    return y.relu_();
  }
  return OneDnnLinear::apply(x, weight, bias.defined() ? bias : torch::empty({0}, weight.options()), true);
}

torch::Tensor feed_forward(const torch::Tensor& x, const torch::Tensor& w1, const torch::Tensor& b1,
                           const torch::Tensor& w2, const torch::Tensor& b2) {
  if (inference_bf16_applies(x, w1) && inference_bf16_applies(x, w2))
    return inference_bf16_feed_forward(x, w1, b1, w2, b2);
  if (bf16_applies(x, w1))
    return Bf16FeedForward::apply(x, w1, empty_if_undefined(b1, w1), w2, empty_if_undefined(b2, w2));
  return linear(linear_relu(x, w1, b1), w2, b2);
}

}  // namespace nmt::model::kernels
