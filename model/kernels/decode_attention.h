#pragma once
// Attention of a decoding step on the CPU: a few queries per (sentence, head) against the
// cached keys and values. LibTorch's scaled_dot_product_attention pays a fixed cost per
// (row, head) pair that dwarfs the work when there is one query and a dozen keys (bench/
// README.md: ~2 us per pair, a quarter of a decoder layer's time at beam 5); this kernel
// does the dot products, softmax and weighted sum per pair in registers, and writes the
// heads already merged, as the output projection reads them.
#include <torch/torch.h>

namespace nmt::model::kernels {

// q: [B, H, Tq, D] float32, k and v: [S, H, Tk, D], both float32 or both bf16 (decoding under
// bf16 products caches them so: half the bytes to read each step; they are read as the floats
// they round to and summed in float32), CPU tensors, each with its last dimension contiguous
// (head views of [S, T, H * D] projections and cache slices qualify);
// key_mask: undefined, or bool [S, 1, 1, Tk] with true = may attend. rows: undefined (S == B,
// query row b reads keys b), or int64 [B] with values in [0, S): query row b reads the keys,
// values and mask of rows[b], so that sentences leaving a decoding batch shrink this table
// instead of every layer's keys and values being copied. Returns softmax(q k^T / sqrt(D)) v
// as [B, Tq, H * D]. A query with no key to attend to gets zeros.
torch::Tensor decode_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                               const torch::Tensor& key_mask, const torch::Tensor& rows = torch::Tensor());

// Whether decode_attention applies: inference (no gradient, no dropout) on the CPU in
// float32 with few queries per pair, where it beats LibTorch's kernel.
bool use_decode_attention(const torch::Tensor& q, const torch::Tensor& key_mask, bool training);

// The self-attention of one decoding step over keys and values that never move: step s's
// keys of every row sit in k[s] ([capacity, slot_rows, H * D], written once when the step ran)
// and row r's ancestor at step s (beam search reorders hypotheses; finished sentences leave)
// is history[r][s] (int32 [N, T], T = steps so far including this one). Reordering the whole
// cache every step (index_select) and growing it by concatenation would copy every layer's
// keys and values twice per step (~8% of decoding at beam 5). q: [N, H * D] with
// contiguous rows (a view of the fused projection qualifies), float32; k and v both float32
// or both bf16, as in decode_attention. Returns [N, H * D] float32.
torch::Tensor decode_self_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                    const torch::Tensor& history, int64_t heads);

}  // namespace nmt::model::kernels
