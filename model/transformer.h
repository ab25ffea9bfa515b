#pragma once
// The Transformer of "Attention Is All You Need": shared (tied) embeddings scaled by
// sqrt(d_model) plus sinusoidal positions, encoder and decoder stacks of attention and
// position-wise FFN sublayers with residual + norm (post-norm as in the paper, or pre-norm;
// LayerNorm or ScaleNorm, model/norm.h), and an output projection tied to the embedding matrix
// (its rows at unit length under model.fix_norm).
#include <torch/torch.h>

#include <vector>

#include "model/attention.h"
#include "model/model_config.h"
#include "model/norm.h"

namespace nmt::model {

// [max_positions, d_model]: pe[p, 2i] = sin(p / 10000^(2i/d)), pe[p, 2i+1] = cos(...).
torch::Tensor sinusoidal_positions(int64_t max_positions, int64_t d_model);

class FeedForwardImpl : public torch::nn::Module {
 public:
  FeedForwardImpl(int64_t d_model, int64_t ffn_dim, double activation_dropout, Activation activation);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};

 private:
  double activation_dropout_;
  Activation activation_;
};
TORCH_MODULE(FeedForward);

class EncoderLayerImpl : public torch::nn::Module {
 public:
  explicit EncoderLayerImpl(const ModelConfig& c);
  torch::Tensor forward(torch::Tensor x, const torch::Tensor& src_mask);
  MultiHeadAttention self_attn{nullptr};
  FeedForward ffn{nullptr};
  Norm norm1{nullptr}, norm2{nullptr};

 private:
  double dropout_;
  bool pre_norm_;
};
TORCH_MODULE(EncoderLayer);

// Per-layer caches of one decoding run.
struct LayerCache {
  StepCache self;
  KVCache cross;
  int64_t beams = 1;  // rows per source sentence (DecoderState::beams)
};

class DecoderLayerImpl : public torch::nn::Module {
 public:
  explicit DecoderLayerImpl(const ModelConfig& c);
  torch::Tensor forward(torch::Tensor x, const torch::Tensor& memory, const torch::Tensor& self_mask,
                        const torch::Tensor& memory_mask, LayerCache* cache = nullptr);
  MultiHeadAttention self_attn{nullptr}, cross_attn{nullptr};
  FeedForward ffn{nullptr};
  Norm norm1{nullptr}, norm2{nullptr}, norm3{nullptr};

 private:
  double dropout_;
  bool pre_norm_;
};
TORCH_MODULE(DecoderLayer);

// What incremental decoding carries from step to step.
struct DecoderState {
  torch::Tensor memory;       // [batch, src_len, d] encoder output
  torch::Tensor memory_mask;  // [batch, 1, 1, src_len]
  std::vector<LayerCache> layers;
  int64_t step = 0;           // positions decoded so far
  // int32 [rows, step]: the slot row of each row's ancestor at every earlier step, in which
  // every layer's StepCache holds its keys and values.
  torch::Tensor history;
  // Beam search: decoder rows = sentences x beams (row = sentence * beams + beam), while
  // the encoder output, its mask and the cross-attention caches stay one per sentence; the
  // cross-attention takes a sentence's beams as that many queries against its source.
  int64_t beams = 1;
  // CPU decoding: int64 [live sentences], the row of `memory`, `memory_mask` and every
  // cross-attention cache each live sentence reads (KVCache::rows). Finished sentences leave
  // this table, and the tensors it indexes stay as they are; undefined: row b is sentence b.
  torch::Tensor source_rows;
  // Keeps rows `index` (expand to beams, drop finished sentences), in every tensor.
  void select(const torch::Tensor& index);
  // The self-attention history takes rows `index` (the caches stay); the encoder output, its
  // mask and the cross-attention caches (one per sentence) take `shared_index`, or stay as they are
  // when it is undefined: beam search reorders hypotheses within a sentence, and only
  // when sentences leave does the source side move (on the CPU, once its caches exist, only
  // `source_rows` does).
  void select(const torch::Tensor& index, const torch::Tensor& shared_index);
};

class TransformerImpl : public torch::nn::Module {
 public:
  explicit TransformerImpl(const ModelConfig& c);

  // Teacher-forced training pass up to the final hidden states: [batch, tgt_len, d].
  // Logits are left to the caller so that the loss can project only non-pad positions.
  // `vectors`: word_vectors() made once by the caller for the whole pass, projection included
  // (under FixNorm a renormalised matrix whose making and gradient cost about 2% of a tiny
  // update each time); undefined: made here.
  torch::Tensor forward_hidden(const torch::Tensor& src, const torch::Tensor& tgt_in,
                               const torch::Tensor& vectors = torch::Tensor());
  // Full logits [batch, tgt_len, vocab] (tests, scoring).
  torch::Tensor forward(const torch::Tensor& src, const torch::Tensor& tgt_in);

  // Encoder output for decoding.
  DecoderState start_decoding(const torch::Tensor& src);
  // Feeds `tokens` [batch] (the previous outputs) and returns log-probabilities
  // [batch, vocab] for the next position, extending the caches.
  torch::Tensor decode_step(const torch::Tensor& tokens, DecoderState& state);
  // The same step's float32 logits [batch, vocab]: search normalizes only what it keeps.
  torch::Tensor decode_step_logits(const torch::Tensor& tokens, DecoderState& state);

  // `vectors` as forward_hidden's.
  torch::Tensor encode(const torch::Tensor& src, torch::Tensor* src_mask, const torch::Tensor& vectors = torch::Tensor());
  torch::Tensor decode(const torch::Tensor& tgt_in, const torch::Tensor& memory, const torch::Tensor& memory_mask,
                       const torch::Tensor& vectors = torch::Tensor());
  // hidden [..., d] -> logits [..., vocab] through the tied embedding matrix (`vectors`: the
  // pass's word_vectors(), as forward_hidden's; undefined: made here).
  torch::Tensor project(const torch::Tensor& hidden, const torch::Tensor& vectors = torch::Tensor());
  // The tied matrix as the model uses it [vocab, d]: embed->weight, or under model.fix_norm its
  // rows at unit length (with no gradient recorded, computed once per change of the weight).
  torch::Tensor word_vectors();

  const ModelConfig& config() const { return config_; }

  torch::nn::Embedding embed{nullptr};
  torch::nn::ModuleList encoder_layers{nullptr}, decoder_layers{nullptr};
  Norm encoder_norm{nullptr}, decoder_norm{nullptr};  // pre-norm only
  torch::Tensor output_bias;                          // [vocab], model.output_bias only

 private:
  // Scaled embeddings (with word dropout `word_drop` while training) plus positions; `vectors`
  // as forward_hidden's.
  torch::Tensor embed_tokens(const torch::Tensor& tokens, int64_t first_position, double word_drop,
                             const torch::Tensor& vectors = torch::Tensor());
  void reset_parameters();

  ModelConfig config_;
  torch::Tensor positions_;  // buffer [max_positions, d]
  // FixNorm's unit rows kept for decoding, and the version and storage of embed->weight they
  // came from (Module::to swaps the storage and keeps the version): a decoding step would
  // otherwise renormalise the whole matrix for a few rows of output.
  torch::Tensor unit_rows_;
  int64_t unit_rows_version_ = -1;
  const void* unit_rows_data_ = nullptr;
};
TORCH_MODULE(Transformer);

// Number of trainable parameters (the tied matrix counted once).
int64_t parameter_count(torch::nn::Module& module);

}  // namespace nmt::model
