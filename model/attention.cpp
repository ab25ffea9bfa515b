#include "model/attention.h"

#include "model/kernels/decode_attention.h"
#include "model/kernels/linear.h"
#include "model/kernels/short_attention.h"

namespace nmt::model {

torch::Tensor padding_mask(const torch::Tensor& tokens, int64_t pad) {
  return tokens.ne(pad).unsqueeze(1).unsqueeze(2);
}

torch::Tensor causal_mask(int64_t len, const torch::Device& device) {
  return torch::ones({len, len}, torch::TensorOptions().dtype(torch::kBool).device(device)).tril().view({1, 1, len, len});
}

torch::Tensor decoder_self_mask(const torch::Tensor& tgt_tokens, int64_t pad) {
  return causal_mask(tgt_tokens.size(1), tgt_tokens.device()) & padding_mask(tgt_tokens, pad);
}

MultiHeadAttentionImpl::MultiHeadAttentionImpl(int64_t d_model, int64_t heads, double dropout, bool self_attention)
    : d_model_(d_model), heads_(heads), dropout_(dropout) {
  TORCH_CHECK(d_model % heads == 0, "d_model ", d_model, " is not divisible by heads ", heads);
  if (self_attention) {
    in_proj = register_module("in_proj", torch::nn::Linear(d_model, 3 * d_model));
    in_bias_mask_ = register_buffer("in_bias_mask", torch::cat({torch::ones({d_model}), torch::zeros({d_model}),
                                                                torch::ones({d_model})}));
  } else {
    q_proj = register_module("q_proj", torch::nn::Linear(d_model, d_model));
    kv_proj = register_module("kv_proj", torch::nn::Linear(d_model, 2 * d_model));
    kv_bias_mask_ = register_buffer("kv_bias_mask", torch::cat({torch::zeros({d_model}), torch::ones({d_model})}));
  }
  out_proj = register_module("out_proj", torch::nn::Linear(d_model, d_model));
}

torch::Tensor MultiHeadAttentionImpl::project(const torch::nn::Linear& proj, const torch::Tensor& x,
                                              const torch::Tensor& bias_mask) const {
  return kernels::linear(x, proj->weight, proj->bias * bias_mask);
}

torch::Tensor MultiHeadAttentionImpl::split_heads(const torch::Tensor& x) const {
  return x.view({x.size(0), x.size(1), heads_, d_model_ / heads_}).transpose(1, 2);
}

torch::Tensor MultiHeadAttentionImpl::attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                             const torch::Tensor& mask) {
  if (use_decode_attention(q, mask, is_training()))
    return kernels::linear(decode_attention(q, k, v, mask), out_proj->weight, out_proj->bias);
  // [b, h, tq, dk] -> [b, tq, d]
  torch::Tensor out = at::scaled_dot_product_attention(q, k, v, mask.defined() ? std::optional<at::Tensor>(mask) : std::nullopt,
                                                       is_training() ? dropout_ : 0.0);
  out = out.transpose(1, 2).reshape({q.size(0), q.size(2), d_model_});
  return kernels::linear(out, out_proj->weight, out_proj->bias);
}

torch::Tensor MultiHeadAttentionImpl::self_forward(const torch::Tensor& x, const torch::Tensor& mask, KVCache* cache) {
  const torch::Tensor projected = project(in_proj, x, in_bias_mask_);
  if (!cache && use_short_attention(projected, d_model_, heads_, x.size(1), is_training() ? dropout_ : 0.0))
    return kernels::linear(short_self_attention(projected, mask, heads_), out_proj->weight, out_proj->bias);
  auto qkv = projected.chunk(3, -1);
  torch::Tensor q = split_heads(qkv[0]), k = split_heads(qkv[1]), v = split_heads(qkv[2]);
  if (cache) {
    if (!cache->empty()) {
      k = torch::cat({cache->k, k}, 2);
      v = torch::cat({cache->v, v}, 2);
    }
    cache->k = k;
    cache->v = v;
  }
  return attend(q, k, v, mask);
}

torch::Tensor MultiHeadAttentionImpl::cross_forward(const torch::Tensor& q, const torch::Tensor& memory,
                                                    const torch::Tensor& mask, KVCache* cache) {
  torch::Tensor k, v;
  if (!cache && use_short_attention(q, d_model_, heads_, memory.size(1), is_training() ? dropout_ : 0.0)) {
    const torch::Tensor kv = project(kv_proj, memory, kv_bias_mask_);
    const torch::Tensor queries = kernels::linear(q, q_proj->weight, q_proj->bias);
    return kernels::linear(short_cross_attention(queries, kv, mask, heads_), out_proj->weight, out_proj->bias);
  }
  if (cache && !cache->empty()) {
    k = cache->k;
    v = cache->v;
  } else {
    auto kv = project(kv_proj, memory, kv_bias_mask_).chunk(2, -1);
    k = split_heads(kv[0]);
    v = split_heads(kv[1]);
    if (cache) {
      cache->k = k;
      cache->v = v;
    }
  }
  return attend(split_heads(kernels::linear(q, q_proj->weight, q_proj->bias)), k, v, mask);
}

}  // namespace nmt::model
