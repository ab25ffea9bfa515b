#include "model/kernels/short_attention.h"

#include <ATen/record_function.h>
#include <ATen/Parallel.h>

#include <cmath>
#include <algorithm>
#include <limits>
#include <vector>

#include "model/kernels/cpu_clones.h"
#include "model/kernels/fast_exp.h"
#include "model/kernels/small_gemm.h"

namespace nmt::model::kernels {
namespace {

AttentionKernel current = AttentionKernel::kShort;

// Keys are padded to a multiple of this (small_gemm.h's column multiple).
constexpr int64_t kLanes = kSmallGemmColumns;
// Keys beyond this take the general kernel: the per-pair buffers grow with Tq * Tk.
constexpr int64_t kMaxKeys = 512;

int64_t round_up(int64_t n) { return (n + kLanes - 1) / kLanes * kLanes; }

// dst[c, r] = src[r, c] for r < rows, c < cols; dst's rows (ld_dst floats apart) are
// zero past `rows`, so that a padded block multiplies as zeros.
void transpose(const float* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst, int64_t ld_dst) {
  for (int64_t c = 0; c < cols; ++c) {
    float* d = dst + c * ld_dst;
    for (int64_t r = 0; r < rows; ++r) d[r] = src[r * ld_src + c];
    for (int64_t r = rows; r < ld_dst; ++r) d[r] = 0.0f;
  }
}

// Where the heads live: element (b, t, h * D + e) of q is q[b * q_batch + t * q_row + h * D + e];
// the same for k and v (which share strides), and for the gradients.
struct Operands {
  float *q, *k, *v;
  int64_t q_batch, q_row, kv_batch, kv_row;
};

struct Sizes {
  int64_t batch, heads, tq, tk, d;
  int64_t tkp() const { return round_up(tk); }
};

// A bool mask viewed as [B, Tq, Tk] (strides may be 0 where it broadcasts).
struct MaskView {
  const bool* p = nullptr;
  int64_t b = 0, q = 0, k = 0;
  bool allows(int64_t bi, int64_t i, int64_t j) const { return !p || p[bi * b + i * q + j * k]; }
};

MaskView view_mask(const torch::Tensor& mask, const Sizes& s) {
  MaskView m;
  if (!mask.defined() || mask.numel() == 0) return m;  // no mask (an empty one stands for none)
  TORCH_CHECK(mask.scalar_type() == torch::kBool && mask.dim() == 4 && mask.size(1) == 1,
              "short attention: the mask must be bool [B or 1, 1, Tq or 1, Tk], got ", mask.sizes(), " ",
              mask.scalar_type());
  const auto e = mask.expand({s.batch, 1, s.tq, s.tk});
  m.p = e.const_data_ptr<bool>();
  m.b = e.stride(0);
  m.q = e.stride(2);
  m.k = e.stride(3);
  return m;
}

// Row i of the scores (scaled here) becomes softmax probabilities over the allowed keys,
// zeros elsewhere and past tk. A row with no allowed key is all zeros.
NMT_CPU_CLONES void softmax_row(float* row, int64_t tk, int64_t tkp, float scale, const MaskView& mask, int64_t b,
                                int64_t i) {
  constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
  float max = kMinusInf;
  for (int64_t j = 0; j < tk; ++j) {
    row[j] = mask.allows(b, i, j) ? row[j] * scale : kMinusInf;
    max = row[j] > max ? row[j] : max;
  }
  if (max == kMinusInf) {
    std::fill(row, row + tkp, 0.0f);
    return;
  }
  float sum = 0.0f;
  for (int64_t j = 0; j < tk; ++j) {
    row[j] = row[j] == kMinusInf ? 0.0f : exp_nonpositive(row[j] - max);
    sum += row[j];
  }
  const float inv = 1.0f / sum;
  for (int64_t j = 0; j < tk; ++j) row[j] *= inv;
  for (int64_t j = tk; j < tkp; ++j) row[j] = 0.0f;
}

// out [B, Tq, H * D] and probs [B, H, Tq, Tkp] for every (sentence, head) pair.
void forward_pairs(const Sizes& s, const Operands& in, const MaskView& mask, float* out, float* probs) {
  const int64_t tkp = s.tkp(), width = s.heads * s.d;
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.d));
  at::parallel_for(0, s.batch * s.heads, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> kt(static_cast<size_t>(s.d * tkp));
    for (int64_t pair = begin; pair < end; ++pair) {
      const int64_t b = pair / s.heads, h = pair % s.heads;
      const float* q = in.q + b * in.q_batch + h * s.d;
      const float* k = in.k + b * in.kv_batch + h * s.d;
      const float* v = in.v + b * in.kv_batch + h * s.d;
      float* p = probs + pair * s.tq * tkp;
      transpose(k, in.kv_row, s.tk, s.d, kt.data(), tkp);
      small_gemm(s.tq, tkp, s.d, q, in.q_row, kt.data(), tkp, p, tkp);  // scores = q k^T
      for (int64_t i = 0; i < s.tq; ++i) softmax_row(p + i * tkp, s.tk, tkp, scale, mask, b, i);
      small_gemm(s.tq, s.d, s.tk, p, tkp, v, in.kv_row, out + b * s.tq * width + h * s.d, width);  // p v
    }
  });
}

// dscores = p * (dp - rowsum(p * dp)) * scale, in place over dp (softmax's backward; the
// scale of the scores moves to the gradient).
NMT_CPU_CLONES void softmax_backward_rows(const float* p, float* dp, int64_t tq, int64_t tkp, float scale) {
  for (int64_t i = 0; i < tq; ++i) {
    const float* pr = p + i * tkp;
    float* dr = dp + i * tkp;
    float dot = 0.0f;
    for (int64_t j = 0; j < tkp; ++j) dot += pr[j] * dr[j];
    for (int64_t j = 0; j < tkp; ++j) dr[j] = pr[j] * (dr[j] - dot) * scale;
  }
}

// The gradients of q, k and v (at `grad`'s strides) from dout [B, Tq, H * D] contiguous.
void backward_pairs(const Sizes& s, const Operands& in, const float* probs, const float* dout, const Operands& grad) {
  const int64_t tkp = s.tkp(), width = s.heads * s.d;
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.d));
  at::parallel_for(0, s.batch * s.heads, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> vt(static_cast<size_t>(s.d * tkp)), ds(static_cast<size_t>(s.tq * tkp)),
        pt(static_cast<size_t>(s.tk * s.tq)), dst(static_cast<size_t>(s.tk * s.tq));
    for (int64_t pair = begin; pair < end; ++pair) {
      const int64_t b = pair / s.heads, h = pair % s.heads;
      const float* q = in.q + b * in.q_batch + h * s.d;
      const float* k = in.k + b * in.kv_batch + h * s.d;
      const float* v = in.v + b * in.kv_batch + h * s.d;
      const float* p = probs + pair * s.tq * tkp;
      const float* dout_pair = dout + b * s.tq * width + h * s.d;
      transpose(v, in.kv_row, s.tk, s.d, vt.data(), tkp);
      small_gemm(s.tq, tkp, s.d, dout_pair, width, vt.data(), tkp, ds.data(), tkp);  // dp = dout v^T
      softmax_backward_rows(p, ds.data(), s.tq, tkp, scale);
      transpose(p, tkp, s.tq, s.tk, pt.data(), s.tq);
      transpose(ds.data(), tkp, s.tq, s.tk, dst.data(), s.tq);
      const int64_t gq = b * grad.q_batch + h * s.d, gkv = b * grad.kv_batch + h * s.d;
      small_gemm(s.tk, s.d, s.tq, pt.data(), s.tq, dout_pair, width, grad.v + gkv, grad.kv_row);  // dv = p^T dout
      small_gemm(s.tq, s.d, s.tk, ds.data(), tkp, k, in.kv_row, grad.q + gq, grad.q_row);         // dq = ds k
      small_gemm(s.tk, s.d, s.tq, dst.data(), s.tq, q, in.q_row, grad.k + gkv, grad.kv_row);      // dk = ds^T q
    }
  });
}

void check_operand(const torch::Tensor& t, const char* name) {
  TORCH_CHECK(t.dim() == 3 && t.scalar_type() == torch::kFloat32 && t.device().is_cpu() && t.stride(2) == 1,
              "short attention: ", name, " must be a float32 CPU tensor [B, T, width] with contiguous rows, got ",
              t.sizes(), " ", t.scalar_type(), " strides ", t.strides());
}

// The operands of self-attention over qkv [B, T, 3 H D] (or its gradient).
Operands self_operands(const torch::Tensor& qkv, int64_t width) {
  float* base = const_cast<float*>(qkv.const_data_ptr<float>());
  return {base, base + width, base + 2 * width, qkv.stride(0), qkv.stride(1), qkv.stride(0), qkv.stride(1)};
}

Operands cross_operands(const torch::Tensor& q, const torch::Tensor& kv, int64_t width) {
  float* kv_base = const_cast<float*>(kv.const_data_ptr<float>());
  return {const_cast<float*>(q.const_data_ptr<float>()), kv_base, kv_base + width, q.stride(0), q.stride(1),
          kv.stride(0), kv.stride(1)};
}

Sizes sizes_of(const torch::Tensor& q, int64_t tk, int64_t heads) {
  TORCH_CHECK(heads > 0 && q.size(2) % heads == 0 && (q.size(2) / heads) % kLanes == 0,
              "short attention: width ", q.size(2), " is not ", heads, " heads of a multiple of ", kLanes);
  return {q.size(0), heads, q.size(1), tk, q.size(2) / heads};
}

// Runs the forward; returns the output and the probabilities the backward needs.
std::pair<torch::Tensor, torch::Tensor> run_forward(const Sizes& s, const Operands& in, const torch::Tensor& mask,
                                                    const torch::TensorOptions& options) {
  auto out = torch::empty({s.batch, s.tq, s.heads * s.d}, options);
  auto probs = torch::empty({s.batch, s.heads, s.tq, s.tkp()}, options);
  forward_pairs(s, in, view_mask(mask, s), out.data_ptr<float>(), probs.data_ptr<float>());
  return {out, probs};
}

class SelfAttention : public torch::autograd::Function<SelfAttention> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& qkv,
                               const torch::Tensor& mask, int64_t heads) {
    RECORD_FUNCTION("nmt::SelfAttention", std::vector<c10::IValue>());  // named in profiles (train --profile)
    check_operand(qkv, "qkv");
    TORCH_CHECK(qkv.size(2) % 3 == 0, "short attention: qkv width ", qkv.size(2), " is not 3 x d_model");
    const int64_t width = qkv.size(2) / 3;
    const Sizes s = sizes_of(qkv.narrow(2, 0, width), qkv.size(1), heads);
    auto [out, probs] = run_forward(s, self_operands(qkv, width), mask, qkv.options());
    ctx->save_for_backward({qkv, probs});
    ctx->saved_data["heads"] = heads;
    return out;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& qkv = saved[0];
    const int64_t width = qkv.size(2) / 3;
    const Sizes s = sizes_of(qkv.narrow(2, 0, width), qkv.size(1), ctx->saved_data["heads"].toInt());
    const auto dout = grads[0].contiguous();
    auto dqkv = torch::empty({s.batch, s.tq, 3 * width}, qkv.options());
    backward_pairs(s, self_operands(qkv, width), saved[1].const_data_ptr<float>(), dout.const_data_ptr<float>(),
                   self_operands(dqkv, width));
    return {dqkv, torch::Tensor(), torch::Tensor()};
  }
};

class CrossAttention : public torch::autograd::Function<CrossAttention> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& q, const torch::Tensor& kv,
                               const torch::Tensor& mask, int64_t heads) {
    RECORD_FUNCTION("nmt::CrossAttention", std::vector<c10::IValue>());  // named in profiles (train --profile)
    check_operand(q, "q");
    check_operand(kv, "kv");
    TORCH_CHECK(kv.size(0) == q.size(0) && kv.size(2) == 2 * q.size(2), "short attention: kv ", kv.sizes(),
                " does not hold keys and values for q ", q.sizes());
    const Sizes s = sizes_of(q, kv.size(1), heads);
    auto [out, probs] = run_forward(s, cross_operands(q, kv, q.size(2)), mask, q.options());
    ctx->save_for_backward({q, kv, probs});
    ctx->saved_data["heads"] = heads;
    return out;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &q = saved[0], &kv = saved[1];
    const Sizes s = sizes_of(q, kv.size(1), ctx->saved_data["heads"].toInt());
    const auto dout = grads[0].contiguous();
    auto dq = torch::empty({s.batch, s.tq, q.size(2)}, q.options());
    auto dkv = torch::empty({s.batch, s.tk, kv.size(2)}, kv.options());
    backward_pairs(s, cross_operands(q, kv, q.size(2)), saved[2].const_data_ptr<float>(),
                   dout.const_data_ptr<float>(), cross_operands(dq, dkv, q.size(2)));
    return {dq, dkv, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

const char* attention_kernel_name(AttentionKernel kernel) { return kernel == AttentionKernel::kShort ? "short" : "sdpa"; }
void set_attention_kernel(AttentionKernel kernel) { current = kernel; }
AttentionKernel attention_kernel() { return current; }

bool use_short_attention(const torch::Tensor& projected, int64_t d_model, int64_t heads, int64_t key_len,
                         double active_dropout) {
  return current == AttentionKernel::kShort && projected.device().is_cpu() &&
         projected.scalar_type() == torch::kFloat32 && heads > 0 && d_model % heads == 0 &&
         (d_model / heads) % kLanes == 0 && key_len > 0 && key_len <= kMaxKeys && active_dropout == 0.0;
}

namespace {
// Autograd functions take no undefined tensors: no mask goes in as an empty one.
torch::Tensor mask_argument(const torch::Tensor& mask) {
  return mask.defined() ? mask : torch::empty({0}, torch::TensorOptions().dtype(torch::kBool));
}
}  // namespace

torch::Tensor short_self_attention(const torch::Tensor& qkv, const torch::Tensor& mask, int64_t heads) {
  return SelfAttention::apply(qkv, mask_argument(mask), heads);
}

torch::Tensor short_cross_attention(const torch::Tensor& q, const torch::Tensor& kv, const torch::Tensor& mask,
                                    int64_t heads) {
  return CrossAttention::apply(q, kv, mask_argument(mask), heads);
}

}  // namespace nmt::model::kernels
