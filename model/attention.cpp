#include "model/attention.h"

#include <algorithm>

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
  // The first position is the decoder's start token, always seen: Marian's start token is its
  // pad (data.hf_tokenizer), ours BOS, so for ours this changes nothing.
  torch::Tensor seen = tgt_tokens.ne(pad);
  seen.select(1, 0).fill_(true);
  return causal_mask(tgt_tokens.size(1), tgt_tokens.device()) & seen.unsqueeze(1).unsqueeze(2);
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

namespace {
// Whether decoding caches keys and values in bf16: CPU decoding under bf16 products
// (train.precision=bf16), where the decoding kernels read them. Each step reads every cached
// key and value of the batch (the cross-attention's: megabytes per layer, beyond L2), so half
// the bytes is less of each step's wait on memory. Products of bf16-rounded keys and values,
// summed in float32: the rounding is the one the bf16 GEMMs already apply to their inputs.
bool bf16_cache_for(const torch::Tensor& q) {
  return q.device().is_cpu() && q.scalar_type() == torch::kFloat32 && !torch::GradMode::is_enabled() &&
         kernels::inference_precision() == kernels::LinearPrecision::kBf16;
}
}  // namespace

torch::Tensor MultiHeadAttentionImpl::attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                             const torch::Tensor& mask, const torch::Tensor& rows) {
  if (kernels::use_decode_attention(q, mask, is_training()))
    return kernels::linear(kernels::decode_attention(q, k, v, mask, rows), out_proj->weight, out_proj->bias);
  if (k.scalar_type() != q.scalar_type())  // a bf16 cache, and more queries than the decoding kernel takes
    return attend(q, k.to(q.scalar_type()), v.to(q.scalar_type()), mask, rows);
  if (rows.defined())  // LibTorch's kernel reads whole rows: take the live ones
    return attend(q, k.index_select(0, rows), v.index_select(0, rows),
                  mask.defined() ? mask.index_select(0, rows) : mask);
  // [b, h, tq, dk] -> [b, tq, d]
  torch::Tensor out = at::scaled_dot_product_attention(q, k, v, mask.defined() ? std::optional<at::Tensor>(mask) : std::nullopt,
                                                       is_training() ? dropout_ : 0.0);
  out = out.transpose(1, 2).reshape({q.size(0), q.size(2), d_model_});
  return kernels::linear(out, out_proj->weight, out_proj->bias);
}

torch::Tensor MultiHeadAttentionImpl::self_forward(const torch::Tensor& x, const torch::Tensor& mask, StepCache* cache) {
  if (cache) return incremental_self_forward(x, *cache);
  const torch::Tensor projected = project(in_proj, x, in_bias_mask_);
  if (kernels::use_short_attention(projected, d_model_, heads_, x.size(1), is_training() ? dropout_ : 0.0))
    return kernels::linear(kernels::short_self_attention(projected, mask, heads_), out_proj->weight, out_proj->bias);
  auto qkv = projected.chunk(3, -1);
  return attend(split_heads(qkv[0]), split_heads(qkv[1]), split_heads(qkv[2]), mask);
}

namespace {
// Room in `c` for step `step` of `rows` rows: doubles the steps (and widens the slots) when
// full, keeping what was written.
void reserve(StepCache& c, int64_t step, int64_t rows, int64_t d, const torch::TensorOptions& options) {
  if (c.k.defined() && c.k.size(0) > step && c.k.size(1) >= rows) return;
  const int64_t old_steps = c.k.defined() ? c.k.size(0) : 0, old_rows = c.k.defined() ? c.k.size(1) : 0;
  const int64_t steps = std::max<int64_t>({step + 1, 2 * old_steps, 16});
  auto grow = [&](const torch::Tensor& old) {
    auto t = torch::empty({steps, std::max(rows, old_rows), d}, options);
    if (old.defined()) t.narrow(0, 0, old_steps).narrow(1, 0, old_rows).copy_(old);
    return t;
  };
  c.k = grow(c.k);
  c.v = grow(c.v);
}
}  // namespace

torch::Tensor MultiHeadAttentionImpl::incremental_self_forward(const torch::Tensor& x, StepCache& c) {
  const int64_t rows = x.size(0), d = d_model_;
  const torch::Tensor qkv = project(in_proj, x, in_bias_mask_).view({rows, 3 * d});
  reserve(c, c.step, rows, d, bf16_cache_for(qkv) ? qkv.options().dtype(torch::kBFloat16) : qkv.options());
  c.k[c.step].narrow(0, 0, rows).copy_(qkv.narrow(1, d, d));
  c.v[c.step].narrow(0, 0, rows).copy_(qkv.narrow(1, 2 * d, d));
  const torch::Tensor q = qkv.narrow(1, 0, d);
  torch::Tensor out;
  if (q.device().is_cpu() && q.scalar_type() == torch::kFloat32) {  // keys and values float32 or bf16
    out = kernels::decode_self_attention(q, c.k, c.v, c.history, heads_);
  } else {  // gather each row's keys ([rows, steps, d]) and use the general kernel
    const auto when = torch::arange(c.history.size(1), c.history.options().dtype(torch::kInt64)).unsqueeze(0);
    const auto from = c.history.to(torch::kInt64);
    const auto k = c.k.index({when, from}), v = c.v.index({when, from});
    out = at::scaled_dot_product_attention(split_heads(q.view({rows, 1, d})), split_heads(k), split_heads(v))
              .transpose(1, 2)
              .reshape({rows, d});
  }
  return kernels::linear(out, out_proj->weight, out_proj->bias).view({rows, 1, d});
}

torch::Tensor MultiHeadAttentionImpl::cross_forward(const torch::Tensor& q, const torch::Tensor& memory,
                                                    const torch::Tensor& mask, KVCache* cache) {
  const torch::Tensor queries = kernels::linear(q, q_proj->weight, q_proj->bias);
  if (cache && !cache->empty()) return attend(split_heads(queries), cache->k, cache->v, mask, cache->rows);
  torch::Tensor kv = project(kv_proj, memory, kv_bias_mask_);
  // The projections' outputs decide: under autocast they are bf16 while q is float32.
  if (!cache && kv.scalar_type() == queries.scalar_type() &&
      kernels::use_short_attention(queries, d_model_, heads_, memory.size(1), is_training() ? dropout_ : 0.0))
    return kernels::linear(kernels::short_cross_attention(queries, kv, mask, heads_), out_proj->weight, out_proj->bias);
  if (cache && bf16_cache_for(queries)) kv = kv.to(torch::kBFloat16);
  const auto parts = kv.chunk(2, -1);
  const torch::Tensor k = split_heads(parts[0]), v = split_heads(parts[1]);
  if (cache) {
    cache->k = k;
    cache->v = v;
  }
  return attend(split_heads(queries), k, v, mask);
}

}  // namespace nmt::model
