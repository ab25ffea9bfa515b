#pragma once
// Multi-head attention with its backward for the short sequences of sentence-level
// translation, on the CPU: training, and scoring a whole target at once.
//
// LibTorch's CPU scaled_dot_product_attention (its flash kernel) multiplies blocks through
// cpublas::gemm, i.e. MKL's sgemm in the torch wheel. At Multi30k's lengths (10-40 pieces,
// head dim 64) every (sentence, head) pair becomes a handful of tiny MKL calls whose
// dispatch and packing cost far more than their arithmetic, with transposes and copies
// around the call (the side-by-side figures: `git show a23d15c^:bench/README.md`, issue 22's
// pass). Here one (sentence,
// head) pair is one task done in L1: scores, softmax and weighted sum through a
// register-blocked micro-kernel, heads read from and written to the projections' own
// [B, T, H * D] layout (no transposes or copies around the call), and a backward that
// reuses the stored probabilities (B * H * Tq * Tk floats, small at these lengths).
#include <torch/torch.h>

namespace nmt::model::kernels {

// Which kernel computes attention outside incremental decoding (train.attention).
enum class AttentionKernel { kSdpa, kShort };
const char* attention_kernel_name(AttentionKernel kernel);  // "sdpa", "short"
// The process's choice (kShort until set), read by MultiHeadAttention.
void set_attention_kernel(AttentionKernel kernel);
AttentionKernel attention_kernel();

// Whether the short kernel applies to a projection's output `projected` (q, or qkv) of a
// d_model-wide layer against `key_len` keys: it is chosen, the tensors are float32 on the
// CPU, the head dim is a multiple of 16, there are at most 512 keys, and no attention dropout
// is active. Elsewhere scaled_dot_product_attention runs.
bool use_short_attention(const torch::Tensor& projected, int64_t d_model, int64_t heads, int64_t key_len,
                         double active_dropout);

// Self-attention on a fused projection: qkv [B, T, 3 * H * D] (q, k and v side by side, as
// the in_proj linear produces them). mask: bool broadcastable to [B, 1, T, T], true = may
// attend, or undefined. Returns softmax(q k^T / sqrt(D)) v as [B, T, H * D], differentiable
// with respect to qkv. A query with no key to attend to gets zeros (and zero gradients).
torch::Tensor short_self_attention(const torch::Tensor& qkv, const torch::Tensor& mask, int64_t heads);

// Cross-attention: q [B, Tq, H * D] against kv [B, Tk, 2 * H * D] (keys, then values);
// mask broadcastable to [B, 1, Tq, Tk]. Differentiable with respect to q and kv.
torch::Tensor short_cross_attention(const torch::Tensor& q, const torch::Tensor& kv, const torch::Tensor& mask,
                                    int64_t heads);

}  // namespace nmt::model::kernels
