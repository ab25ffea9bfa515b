#include "model/transformer.h"

#include <cmath>

#include "model/kernels/fused_dropout.h"
#include "model/kernels/linear.h"
#include "model/structured_dropout.h"

namespace nmt::model {


torch::Tensor sinusoidal_positions(int64_t max_positions, int64_t d_model) {
  auto pos = torch::arange(max_positions, torch::kFloat64).unsqueeze(1);               // [P, 1]
  auto two_i = torch::arange(0, d_model, 2, torch::kFloat64);                          // [d/2]
  auto angle = pos / torch::pow(10000.0, two_i / static_cast<double>(d_model));        // [P, d/2]
  auto pe = torch::stack({torch::sin(angle), torch::cos(angle)}, 2).view({max_positions, d_model});
  return pe.to(torch::kFloat32);
}

FeedForwardImpl::FeedForwardImpl(int64_t d_model, int64_t ffn_dim, double activation_dropout, Activation activation)
    : activation_dropout_(activation_dropout), activation_(activation) {
  fc1 = register_module("fc1", torch::nn::Linear(d_model, ffn_dim));
  fc2 = register_module("fc2", torch::nn::Linear(ffn_dim, d_model));
}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x) {
  if (activation_ != Activation::kRelu) {  // the fused kernels are ReLU's: LibTorch's ops between the two layers
    const auto pre = kernels::linear(x, fc1->weight, fc1->bias);
    const auto hidden = activation_ == Activation::kGelu ? torch::gelu(pre) : torch::silu(pre);
    return kernels::linear(kernels::dropout_add(torch::Tensor(), hidden, activation_dropout_, is_training()), fc2->weight,
                           fc2->bias);
  }
  // No activation dropout in effect: the two layers as one (under bf16, a smaller footprint).
  if (activation_dropout_ == 0.0 || !is_training())
    return kernels::feed_forward(x, fc1->weight, fc1->bias, fc2->weight, fc2->bias);
  const auto hidden = kernels::linear_relu(x, fc1->weight, fc1->bias);
  return kernels::linear(kernels::dropout_add(torch::Tensor(), hidden, activation_dropout_, is_training()), fc2->weight,
                         fc2->bias);
}

namespace {
// One sublayer with its residual: post-norm  x = norm(x + drop(f(x)))  (the paper), or
// pre-norm  x = x + drop(f(norm(x))).
template <typename Fn>
torch::Tensor residual(const torch::Tensor& x, Norm& norm, bool pre_norm, double p, bool training,
                       Fn&& f) {
  if (pre_norm) return kernels::dropout_add(x, f(norm(x)), p, training);
  return norm(kernels::dropout_add(x, f(x), p, training));
}
}  // namespace

EncoderLayerImpl::EncoderLayerImpl(const ModelConfig& c) : dropout_(c.dropout), pre_norm_(c.pre_norm) {
  self_attn = register_module("self_attn", MultiHeadAttention(c.d_model, c.heads, c.attention_dropout, true));
  ffn = register_module("ffn", FeedForward(c.d_model, c.ffn_dim, c.activation_dropout, c.activation));
  norm1 = register_module("norm1", Norm(c.norm, c.d_model));
  norm2 = register_module("norm2", Norm(c.norm, c.d_model));
}

torch::Tensor EncoderLayerImpl::forward(torch::Tensor x, const torch::Tensor& src_mask) {
  x = residual(x, norm1, pre_norm_, dropout_, is_training(),
               [&](const torch::Tensor& h) { return self_attn->self_forward(h, src_mask); });
  return residual(x, norm2, pre_norm_, dropout_, is_training(), [&](const torch::Tensor& h) { return ffn(h); });
}

DecoderLayerImpl::DecoderLayerImpl(const ModelConfig& c) : dropout_(c.dropout), pre_norm_(c.pre_norm) {
  self_attn = register_module("self_attn", MultiHeadAttention(c.d_model, c.heads, c.attention_dropout, true));
  cross_attn = register_module("cross_attn", MultiHeadAttention(c.d_model, c.heads, c.attention_dropout, false));
  ffn = register_module("ffn", FeedForward(c.d_model, c.ffn_dim, c.activation_dropout, c.activation));
  norm1 = register_module("norm1", Norm(c.norm, c.d_model));
  norm2 = register_module("norm2", Norm(c.norm, c.d_model));
  norm3 = register_module("norm3", Norm(c.norm, c.d_model));
}

torch::Tensor DecoderLayerImpl::forward(torch::Tensor x, const torch::Tensor& memory, const torch::Tensor& self_mask,
                                        const torch::Tensor& memory_mask, LayerCache* cache) {
  x = residual(x, norm1, pre_norm_, dropout_, is_training(), [&](const torch::Tensor& h) {
    return self_attn->self_forward(h, self_mask, cache ? &cache->self : nullptr);
  });
  x = residual(x, norm2, pre_norm_, dropout_, is_training(), [&](const torch::Tensor& h) {
    if (!cache || cache->beams == 1) return cross_attn->cross_forward(h, memory, memory_mask, cache ? &cache->cross : nullptr);
    // [sentences * beams, 1, d] -> [sentences, beams, d]: the beams query their source together.
    const int64_t rows = h.size(0), d = h.size(2);
    return cross_attn->cross_forward(h.reshape({rows / cache->beams, cache->beams, d}), memory, memory_mask, &cache->cross)
        .reshape({rows, 1, d});
  });
  return residual(x, norm3, pre_norm_, dropout_, is_training(), [&](const torch::Tensor& h) { return ffn(h); });
}

void DecoderState::select(const torch::Tensor& index) { select(index, index); }

void DecoderState::select(const torch::Tensor& index, const torch::Tensor& shared_index) {
  auto take = [](KVCache& c, const torch::Tensor& rows) {
    if (c.empty()) return;
    c.k = c.k.index_select(0, rows);
    c.v = c.v.index_select(0, rows);
  };
  history = history.index_select(0, index);
  if (!shared_index.defined()) return;
  const bool cached = !layers.empty() && !layers.front().cross.empty();
  if (cached && memory.device().is_cpu()) {
    // The decoding attention reads the live rows through this table: at the quickstart's
    // shape the keys and values a batch's sentences would copy are 16 MB per select.
    source_rows = source_rows.defined() ? source_rows.index_select(0, shared_index) : shared_index;
    return;
  }
  memory = memory.index_select(0, shared_index);
  memory_mask = memory_mask.index_select(0, shared_index);
  for (auto& l : layers) take(l.cross, shared_index);
}

TransformerImpl::TransformerImpl(const ModelConfig& c) : config_(c) {
  TORCH_CHECK(c.vocab_size > 0, "model vocab_size must be set (from the shard manifest)");
  embed = register_module("embed", torch::nn::Embedding(torch::nn::EmbeddingOptions(c.vocab_size, c.d_model)));
  encoder_layers = register_module("encoder_layers", torch::nn::ModuleList());
  decoder_layers = register_module("decoder_layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.encoder_layers; ++i) encoder_layers->push_back(EncoderLayer(c));
  for (int64_t i = 0; i < c.decoder_layers; ++i) decoder_layers->push_back(DecoderLayer(c));
  if (c.pre_norm) {
    encoder_norm = register_module("encoder_norm", Norm(c.norm, c.d_model));
    decoder_norm = register_module("decoder_norm", Norm(c.norm, c.d_model));
  }
  positions_ = register_buffer("positions", sinusoidal_positions(c.max_positions, c.d_model));
  if (c.output_bias) output_bias = register_parameter("output_bias", torch::zeros({c.vocab_size}));
  reset_parameters();
}

void TransformerImpl::reset_parameters() {
  torch::NoGradGuard no_grad;
  // Xavier-uniform for every projection, zero biases (the paper's reference code);
  // embeddings N(0, d^-1/2) so that after the sqrt(d) scale they have unit variance, and
  // the pad row zero. Under FixNorm only the rows' directions count; U(-0.01, 0.01) as in
  // Nguyen & Salazar's code keeps the rows short, so that early updates turn them quickly.
  for (auto& p : named_parameters()) {
    const std::string& name = p.key();
    if (name == "embed.weight") continue;
    if (name.find("norm") != std::string::npos) continue;  // norms keep their own (model/norm.h)
    if (name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0) torch::nn::init::xavier_uniform_(p.value());
    else if (name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0) p.value().zero_();
  }
  if (config_.fix_norm) embed->weight.uniform_(-0.01, 0.01);
  else embed->weight.normal_(0.0, std::pow(static_cast<double>(config_.d_model), -0.5));
  embed->weight[config_.pad_id].zero_();
}

torch::Tensor TransformerImpl::embed_tokens(const torch::Tensor& tokens, int64_t first_position, double word_drop,
                                            const torch::Tensor& vectors) {
  const int64_t len = tokens.size(1);
  TORCH_CHECK(first_position + len <= config_.max_positions, "sequence of ", first_position + len,
              " positions exceeds model.max_positions = ", config_.max_positions);
  const auto rows =
      config_.fix_norm ? torch::embedding(vectors.defined() ? vectors : word_vectors(), tokens) : embed(tokens);
  auto x = word_dropout(rows * std::sqrt(static_cast<double>(config_.d_model)), word_drop, is_training()) +
           positions_.slice(0, first_position, first_position + len);
  return kernels::dropout_add(torch::Tensor(), x, config_.dropout, is_training());
}

torch::Tensor TransformerImpl::encode(const torch::Tensor& src, torch::Tensor* src_mask, const torch::Tensor& vectors) {
  *src_mask = padding_mask(src, config_.pad_id);
  torch::Tensor x = embed_tokens(src, 0, config_.source_word_dropout, vectors);
  for (const auto& layer : *encoder_layers)
    if (!skip_layer(config_.encoder_layerdrop, is_training())) x = layer->as<EncoderLayer>()->forward(x, *src_mask);
  return config_.pre_norm ? encoder_norm(x) : x;
}

torch::Tensor TransformerImpl::decode(const torch::Tensor& tgt_in, const torch::Tensor& memory,
                                      const torch::Tensor& memory_mask, const torch::Tensor& vectors) {
  const torch::Tensor self_mask = decoder_self_mask(tgt_in, config_.pad_id);
  torch::Tensor x = embed_tokens(tgt_in, 0, config_.target_word_dropout, vectors);
  for (const auto& layer : *decoder_layers)
    if (!skip_layer(config_.decoder_layerdrop, is_training()))
      x = layer->as<DecoderLayer>()->forward(x, memory, self_mask, memory_mask);
  return config_.pre_norm ? decoder_norm(x) : x;
}

torch::Tensor TransformerImpl::project(const torch::Tensor& hidden, const torch::Tensor& vectors) {
  // tied output projection: hidden E^T (+ the logits bias under model.output_bias)
  return kernels::linear(hidden, vectors.defined() ? vectors : word_vectors(), output_bias);
}

torch::Tensor TransformerImpl::word_vectors() {
  if (!config_.fix_norm) return embed->weight;
  // The pad row is zero and stays zero: the clamp keeps 0 / 0 out.
  const auto unit = [&] { return embed->weight / embed->weight.norm(2, {1}, /*keepdim=*/true).clamp_min(1e-12); };
  if (torch::GradMode::is_enabled()) return unit();
  const auto& weight = embed->weight;
  if (!unit_rows_.defined() || unit_rows_version_ != weight._version() || unit_rows_data_ != weight.const_data_ptr()) {
    unit_rows_ = unit();
    unit_rows_version_ = weight._version();
    unit_rows_data_ = weight.const_data_ptr();
  }
  return unit_rows_;
}

torch::Tensor TransformerImpl::forward_hidden(const torch::Tensor& src, const torch::Tensor& tgt_in,
                                              const torch::Tensor& vectors) {
  const torch::Tensor pass_vectors = vectors.defined() ? vectors : word_vectors();  // embed->weight without FixNorm
  torch::Tensor src_mask;
  torch::Tensor memory = encode(src, &src_mask, pass_vectors);
  return decode(tgt_in, memory, src_mask, pass_vectors);
}

torch::Tensor TransformerImpl::forward(const torch::Tensor& src, const torch::Tensor& tgt_in) {
  const torch::Tensor vectors = word_vectors();
  return project(forward_hidden(src, tgt_in, vectors), vectors);
}

DecoderState TransformerImpl::start_decoding(const torch::Tensor& src) {
  DecoderState s;
  s.memory = encode(src, &s.memory_mask);
  s.layers.resize(decoder_layers->size());
  return s;
}

torch::Tensor TransformerImpl::decode_step(const torch::Tensor& tokens, DecoderState& state) {
  return torch::log_softmax(decode_step_logits(tokens, state), -1);
}

torch::Tensor TransformerImpl::decode_step_logits(const torch::Tensor& tokens, DecoderState& state) {
  // One new position: it may see every cached one, so the self-attention needs no mask.
  torch::Tensor x = embed_tokens(tokens.view({-1, 1}), state.step, /*word_drop=*/0.0);
  const int64_t rows = x.size(0);
  const auto itself = torch::arange(rows, tokens.options().dtype(torch::kInt32)).view({rows, 1});
  state.history = state.step == 0 ? itself : torch::cat({state.history, itself}, 1);
  for (auto& layer : state.layers) {
    layer.beams = state.beams;
    layer.cross.rows = state.source_rows;
    layer.self.history = state.history;
    layer.self.step = state.step;
  }
  for (size_t i = 0; i < decoder_layers->size(); ++i)
    x = decoder_layers[i]->as<DecoderLayer>()->forward(x, state.memory, torch::Tensor(), state.memory_mask,
                                                       &state.layers[i]);
  if (config_.pre_norm) x = decoder_norm(x);
  ++state.step;
  return project(x.squeeze(1)).to(torch::kFloat32);
}

int64_t parameter_count(torch::nn::Module& module) {
  int64_t n = 0;
  for (const auto& p : module.parameters()) n += p.numel();
  return n;
}

}  // namespace nmt::model
