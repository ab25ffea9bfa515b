#pragma once
// Plain configuration of the Transformer (no YAML here: config/config_loader.cpp reads and
// validates it, with the rest of the configuration).
#include <cstdint>

namespace nmt::model {

// model.norm: LayerNorm (the paper) or ScaleNorm (model/norm.h).
enum class NormKind { kLayer, kScale };

// model.activation: the FFN's nonlinearity. ReLU is the paper's (and the fused kernels');
// GELU (exact, with erf) and SiLU (x * sigmoid(x), Marian's "swish", OPUS-MT's) are what
// pretrained models bring (tools/hf_layout.py).
enum class Activation { kRelu, kGelu, kSilu };

struct ModelConfig {
  int64_t vocab_size = 0;         // joint vocabulary size; set from the shard manifest, not from YAML
  int64_t pad_id = 0;             // padding id; set from the shard manifest
  int64_t d_model = 512;          // embedding and hidden width
  int64_t ffn_dim = 2048;         // inner width of the position-wise feed-forward network
  int64_t heads = 8;              // attention heads (must divide d_model)
  int64_t encoder_layers = 6;     // encoder blocks
  int64_t decoder_layers = 6;     // decoder blocks
  double dropout = 0.1;           // dropout on embeddings and residual branches
  double attention_dropout = 0.0; // dropout on attention weights
  double activation_dropout = 0.0;  // dropout after the FFN's ReLU
  // Low-resource regularisers (model/structured_dropout.h), all off by default:
  double source_word_dropout = 0.0;  // drop a whole source token embedding with this probability
  double target_word_dropout = 0.0;  // ... a whole decoder input token embedding
  double encoder_layerdrop = 0.0;    // skip a whole encoder layer in a training pass (LayerDrop)
  double decoder_layerdrop = 0.0;    // ... a whole decoder layer
  bool pre_norm = false;          // the norm before each sublayer (true) or after the residual (paper)
  NormKind norm = NormKind::kLayer;  // layer|scale (model/norm.h)
  // FixNorm (Nguyen & Chiang 2018, as in Nguyen & Salazar 2019): every row of the tied embedding
  // matrix is used at unit length, in the inputs (times sqrt(d_model), as always) and in the
  // output projection, whose logits are then the final hidden state's length times a cosine.
  bool fix_norm = false;
  int64_t max_positions = 1024;   // longest sequence the sinusoidal table covers
  Activation activation = Activation::kRelu;  // the FFN's nonlinearity: relu (the paper's),
                                              // gelu (exact, erf) or silu (x sigmoid(x), OPUS-MT's)
  // A learned bias [vocab] added to the logits (Marian's and OPUS-MT's final_logits_bias); off:
  // the paper's tied projection alone, and no parameter in the checkpoint.
  bool output_bias = false;
};

}  // namespace nmt::model
