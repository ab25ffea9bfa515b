#pragma once
// Masks and multi-head attention (train.attention's kernel: short_attention.h's or LibTorch's
// scaled_dot_product_attention; decode_attention.h's in CPU decoding).
// Mask convention throughout: bool, true = "may attend", broadcastable to
// [batch, heads, query_len, key_len].
#include <torch/torch.h>

namespace nmt::model {

// [batch, 1, 1, len]: true where `tokens` [batch, len] is not `pad`.
torch::Tensor padding_mask(const torch::Tensor& tokens, int64_t pad);
// [1, 1, len, len]: true on and below the diagonal (position i sees positions <= i).
torch::Tensor causal_mask(int64_t len, const torch::Device& device);
// The decoder's self-attention mask of the paper: subsequent positions and padding both
// hidden, but never the first position, the decoder's start token (which is pad in Marian's
// models). [batch, 1, len, len].
torch::Tensor decoder_self_mask(const torch::Tensor& tgt_tokens, int64_t pad);

// Keys and values of a cross-attention layer kept across decoding steps (the memory's
// projections, computed once).
struct KVCache {
  torch::Tensor k, v;  // [batch, heads, src_len, head_dim]
  // int64 [live sentences]: the row of k, v and the mask each live sentence reads (CPU
  // decoding: DecoderState::select shrinks this table as sentences finish, instead of copying
  // every layer's keys and values); undefined: row b reads row b.
  torch::Tensor rows;
  bool empty() const { return !k.defined(); }
};

// Keys and values of a decoder self-attention layer across decoding steps. They never move
// once written: step s's keys of slot row r are k[s][r]; which slot row a hypothesis reads
// at each step is `history` (DecoderState's), so reordering beams or dropping finished
// sentences copies a table of row numbers instead of every layer's cache.
struct StepCache {
  torch::Tensor k, v;     // [capacity_steps, slot_rows, d_model], grown by doubling
  torch::Tensor history;  // int32 [rows, step + 1]: this step's ancestors, the last column the rows themselves
  int64_t step = 0;       // the step being decoded
};

class MultiHeadAttentionImpl : public torch::nn::Module {
 public:
  // Self-attention projects q, k, v with one fused [3d, d] matrix; cross-attention uses a
  // query matrix and a fused [2d, d] key-value matrix (keys/values come from the encoder).
  MultiHeadAttentionImpl(int64_t d_model, int64_t heads, double dropout, bool self_attention);

  // Self-attention. x: [batch, len, d]. With `cache`, x [rows, 1, d] holds one new position
  // per row, whose keys and values join the cache (incremental decoding; no mask).
  torch::Tensor self_forward(const torch::Tensor& x, const torch::Tensor& mask, StepCache* cache = nullptr);
  // Cross-attention. q: [batch, tgt_len, d], memory: [batch, src_len, d]. With `cache`,
  // the memory's projections are computed once and reused.
  torch::Tensor cross_forward(const torch::Tensor& q, const torch::Tensor& memory, const torch::Tensor& mask,
                              KVCache* cache = nullptr);

  torch::nn::Linear in_proj{nullptr};   // self: [3d, d]
  torch::nn::Linear q_proj{nullptr};    // cross: [d, d]
  torch::nn::Linear kv_proj{nullptr};   // cross: [2d, d]
  torch::nn::Linear out_proj{nullptr};  // [d, d]

 private:
  torch::Tensor split_heads(const torch::Tensor& x) const;  // [b, t, d] -> [b, h, t, d/h]
  torch::Tensor incremental_self_forward(const torch::Tensor& x, StepCache& cache);
  // rows: as KVCache::rows (query row b reads keys, values and mask row rows[b]).
  torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                       const torch::Tensor& mask, const torch::Tensor& rows = torch::Tensor());
  // Applies a projection whose key slice has no bias. A key bias adds q.b_k to every
  // score of a query, which softmax cancels: its true gradient is zero, so Adam would
  // only amplify rounding noise in it (and N-rank runs would drift apart from 1-rank
  // runs on it). Multiplying by this 0/1 mask keeps the key bias at zero exactly.
  torch::Tensor project(const torch::nn::Linear& proj, const torch::Tensor& x, const torch::Tensor& bias_mask) const;
  int64_t d_model_, heads_;
  double dropout_;
  torch::Tensor in_bias_mask_, kv_bias_mask_;  // buffers: 1 for q/v entries, 0 for k
};
TORCH_MODULE(MultiHeadAttention);

}  // namespace nmt::model
